package db

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Why a rule's SELECT was refused. Each error the sandbox returns wraps one
// of these, with the detail after it.
var (
	ErrRuleSyntax          = errors.New("not valid SQL")
	ErrRuleNotSelect       = errors.New("not a SELECT")
	ErrRuleNotOneStatement = errors.New("not one statement")
	ErrRuleDenied          = errors.New("not allowed")
	ErrRuleParam           = errors.New("unknown parameter")
	ErrRuleNoUID           = errors.New("no uid column")
	ErrRuleTimeLimit       = errors.New("over the time limit")
	ErrRuleRowCap          = errors.New("over the row cap")
)

// SandboxOptions bound what one rule's SELECT may take.
type SandboxOptions struct {
	// TimeLimit is how long one statement may run (default 10 s); past it
	// SQLite is interrupted and the pass fails.
	TimeLimit time.Duration
	// MaxRows is how many rows a statement may return (default 100,000);
	// one more fails the pass rather than act on part of it.
	MaxRows int
	// Conns bounds the sandbox's connections (default 2).
	Conns int
	// MaxLength bounds every string SQLite builds, in bytes (default 10 MB),
	// so that a statement cannot make a string of a gigabyte.
	MaxLength int
}

// Sandbox runs the cleanup rules' SELECTs. Its connections see only the
// rules' views (rules_views.go) and functions: each creates the views in
// its TEMP schema, then turns query_only on, so that nothing it runs
// writes, not even to TEMP; then an authorizer allows reading the views,
// the functions of an allow-list, and nothing else. A statement is one
// SELECT, with a time limit and a row cap.
type Sandbox struct {
	pool *sql.DB
	opts SandboxOptions
	// inner prefixes the names of the inner views (see createViewsSQL):
	// random, so that no rule can name them.
	inner string
}

// RuleMatch is one row of a rule's result.
type RuleMatch struct {
	UID    string
	Reason string
	// Finding marks a row shown with the matches but never acted on,
	// such as a TTL that does not parse.
	Finding bool
}

// RuleColumns tells which of the result columns a rule's SELECT has.
type RuleColumns struct {
	Reason, Finding bool
}

// OpenSandbox opens the rules' sandbox on the database file of d. Close
// it when done.
func (d Rules) OpenSandbox(opts SandboxOptions) (*Sandbox, error) {
	opts.TimeLimit = cmp.Or(opts.TimeLimit, 10*time.Second)
	opts.MaxRows = cmp.Or(opts.MaxRows, 100_000)
	opts.Conns = cmp.Or(opts.Conns, 2)
	opts.MaxLength = cmp.Or(opts.MaxLength, 10<<20)
	s := &Sandbox{opts: opts, inner: "inner_" + rand.Text() + "_"}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	// A pass reads much of the mirror: through the kernel's page cache,
	// mapped, rather than a pread and a copy per page, which cost a pass
	// twice the CPU (see Options.MapReads). The mapped pages count in RSS
	// while a connection lives, so connections go once idle.
	q.Add("_pragma", "mmap_size(1073741824)")
	// Never create the file: a sandbox opened on a database that is gone
	// fails instead.
	q.Add("mode", "rw")
	u := url.URL{Scheme: "file", Path: d.Path, RawQuery: q.Encode()}
	s.pool = sql.OpenDB(sandboxConnector{dsn: u.String(), s: s})
	s.pool.SetMaxOpenConns(opts.Conns)
	s.pool.SetMaxIdleConns(opts.Conns)
	s.pool.SetConnMaxIdleTime(time.Minute)
	return s, nil
}

// Close closes the sandbox's connections.
func (s *Sandbox) Close() error {
	return s.pool.Close()
}

// Options are the bounds the sandbox applies.
func (s *Sandbox) Options() SandboxOptions { return s.opts }

// Validate prepares query without running it, with params and :now bound:
// the authorizer judges it as it would a run, and its columns are checked.
func (s *Sandbox) Validate(ctx context.Context, query string, params map[string]any) (RuleColumns, error) {
	st, err := lexRule(query)
	if err != nil {
		return RuleColumns{}, err
	}
	if _, err := bindRule(st, params, time.Time{}); err != nil {
		return RuleColumns{}, err
	}
	conn, auth, err := s.conn(ctx)
	if err != nil {
		return RuleColumns{}, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, s.opts.TimeLimit)
	defer cancel()
	var names []string
	err = conn.Raw(func(dc any) error {
		ci, ok := dc.(interface {
			ColumnInfo(string) ([]sqlite.ColumnInfo, error)
		})
		if !ok {
			return fmt.Errorf("the SQLite driver cannot describe a statement's columns (%T)", dc)
		}
		info, err := ci.ColumnInfo(st.text)
		if err != nil {
			return err
		}
		for _, c := range info {
			names = append(names, c.Name)
		}
		return nil
	})
	if err != nil {
		return RuleColumns{}, s.why(ctx, err, auth)
	}
	_, cols, err := resultColumns(names)
	return cols, err
}

// Query runs query with params and :now bound, and returns its rows: uid
// (required), reason and finding (optional), other columns ignored. A uid
// returned twice counts once, as its first row.
func (s *Sandbox) Query(ctx context.Context, query string, params map[string]any, now time.Time) ([]RuleMatch, error) {
	st, err := lexRule(query)
	if err != nil {
		return nil, err
	}
	args, err := bindRule(st, params, now)
	if err != nil {
		return nil, err
	}
	conn, auth, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// The time limit is the statement's: opening a connection (and
	// creating its views) is not the rule's doing.
	ctx, cancel := context.WithTimeout(ctx, s.opts.TimeLimit)
	defer cancel()
	rows, err := conn.QueryContext(ctx, st.text, args...)
	if err != nil {
		return nil, s.why(ctx, err, auth)
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, s.why(ctx, err, auth)
	}
	idx, _, err := resultColumns(names)
	if err != nil {
		return nil, err
	}
	dest := make([]any, len(names))
	var skip sql.RawBytes
	for i := range dest {
		dest[i] = &skip
	}
	var uid, reason sql.NullString
	var finding any
	dest[idx.uid] = &uid
	if idx.reason >= 0 {
		dest[idx.reason] = &reason
	}
	if idx.finding >= 0 {
		dest[idx.finding] = &finding
	}
	out := []RuleMatch{}
	seen := map[string]bool{}
	for rows.Next() {
		reason, finding = sql.NullString{}, nil
		if err := rows.Scan(dest...); err != nil {
			return nil, s.why(ctx, err, auth)
		}
		if !uid.Valid || seen[uid.String] {
			continue
		}
		if len(out) == s.opts.MaxRows {
			return nil, fmt.Errorf("%w: more than %d rows", ErrRuleRowCap, s.opts.MaxRows)
		}
		seen[uid.String] = true
		out = append(out, RuleMatch{UID: uid.String, Reason: reason.String, Finding: truthy(finding)})
	}
	if err := rows.Err(); err != nil {
		return nil, s.why(ctx, err, auth)
	}
	if err := ctx.Err(); err != nil {
		return nil, s.why(ctx, err, auth)
	}
	return out, nil
}

// truthy is SQLite's truth of a value: a non-zero number, or text that
// starts with one.
func truthy(v any) bool {
	switch v := v.(type) {
	case int64:
		return v != 0
	case float64:
		return v != 0
	case bool:
		return v
	case string, []byte:
		var f float64
		_, err := fmt.Sscan(fmt.Sprint(v), &f)
		return err == nil && f != 0
	}
	return false
}

type resultIndex struct{ uid, reason, finding int }

// resultColumns finds uid, reason and finding among a result's columns,
// in any case; uid is required.
func resultColumns(names []string) (resultIndex, RuleColumns, error) {
	idx := resultIndex{-1, -1, -1}
	for i, n := range names {
		switch strings.ToLower(n) {
		case "uid":
			if idx.uid < 0 {
				idx.uid = i
			}
		case "reason":
			if idx.reason < 0 {
				idx.reason = i
			}
		case "finding":
			if idx.finding < 0 {
				idx.finding = i
			}
		}
	}
	if idx.uid < 0 {
		return idx, RuleColumns{}, fmt.Errorf("%w: the result's columns are (%s); name one uid (SELECT o.uid …)",
			ErrRuleNoUID, strings.Join(names, ", "))
	}
	return idx, RuleColumns{Reason: idx.reason >= 0, Finding: idx.finding >= 0}, nil
}

// bindRule binds the statement's named parameters: :now, the pass's time
// in the tables' format, and each of params. A parameter params does not
// set is an error.
func bindRule(st ruleStatement, params map[string]any, now time.Time) ([]any, error) {
	var args []any
	for _, p := range st.params {
		if p == "now" {
			args = append(args, sql.Named("now", now.UTC().Format(timeFormat)))
			continue
		}
		v, ok := params[p]
		if !ok {
			return nil, fmt.Errorf("%w: the statement uses :%s, which params does not set", ErrRuleParam, p)
		}
		switch x := v.(type) {
		case int:
			v = int64(x)
		case int32:
			v = int64(x)
		case float32:
			v = float64(x)
		case time.Duration:
			v = x.Seconds()
		case nil, int64, float64, string, bool:
		default:
			return nil, fmt.Errorf("%w: :%s is a %T, not text, a number or a bool", ErrRuleParam, p, v)
		}
		args = append(args, sql.Named(p, v))
	}
	return args, nil
}

// conn takes a connection for one statement, with its limits set and an
// authorizer of its own, which records why it refuses.
func (s *Sandbox) conn(ctx context.Context) (*sql.Conn, *authState, error) {
	conn, err := s.pool.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("rules sandbox: %w", err)
	}
	auth := &authState{inner: s.inner}
	err = conn.Raw(func(dc any) error {
		reg, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return fmt.Errorf("the SQLite driver has no authorizer (%T)", dc)
		}
		return reg.RegisterAuthorizer(auth.authorize)
	})
	if err == nil {
		_, err = sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, s.opts.MaxLength)
	}
	if err == nil {
		_, err = sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_ATTACHED, 0)
	}
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("rules sandbox: %w", err)
	}
	return conn, auth, nil
}

// why turns SQLite's error into the reason a rule is refused.
func (s *Sandbox) why(ctx context.Context, err error, auth *authState) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: it ran longer than %s", ErrRuleTimeLimit, s.opts.TimeLimit)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if auth != nil && auth.denied != "" {
		// SQLite says "not authorized" (or, for a function, "not
		// authorized to use function"); the authorizer knows what.
		return fmt.Errorf("%w: %s", ErrRuleDenied, auth.denied)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_AUTH:
			return fmt.Errorf("%w: %s", ErrRuleDenied, se.Error())
		case sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w: rules only read (%s)", ErrRuleDenied, se.Error())
		case sqlite3.SQLITE_INTERRUPT:
			return fmt.Errorf("%w: it ran longer than %s", ErrRuleTimeLimit, s.opts.TimeLimit)
		case sqlite3.SQLITE_ERROR, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_MISMATCH:
			return fmt.Errorf("%w: %s", ErrRuleSyntax, strings.TrimPrefix(se.Error(), "SQL logic error: "))
		}
	}
	return fmt.Errorf("rules sandbox: %w", err)
}

// sandboxConnector opens the sandbox's connections with the rules'
// private driver and sets each up before database/sql sees it.
type sandboxConnector struct {
	dsn string
	s   *Sandbox
}

func (c sandboxConnector) Driver() driver.Driver { return rulesDriver() }

func (c sandboxConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := rulesDriver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			dc.Close()
		}
	}()
	ex, isExec := dc.(driver.ExecerContext)
	reg, isReg := dc.(sqlite.AuthorizerRegisterer)
	if !isExec || !isReg {
		return nil, fmt.Errorf("the SQLite driver has no authorizer (%T)", dc)
	}
	// The views first: once query_only is on, not even TEMP is written.
	if _, err := ex.ExecContext(ctx, createViewsSQL(c.s.inner), nil); err != nil {
		return nil, fmt.Errorf("creating the views: %w", err)
	}
	if _, err := ex.ExecContext(ctx, "PRAGMA query_only = 1", nil); err != nil {
		return nil, err
	}
	// Each statement gets an authorizer of its own (Sandbox.conn); this
	// one holds until then.
	if err := reg.RegisterAuthorizer((&authState{inner: c.s.inner}).authorize); err != nil {
		return nil, err
	}
	ok = true
	return dc, nil
}

var (
	rulesDriverOnce sync.Once
	rulesDriverVal  *sqlite.Driver
)

// rulesDriver is a SQLite driver of the sandbox's own, which alone has the
// rules' functions: the package-level driver, which every other
// connection of the process uses, is left as it is.
func rulesDriver() *sqlite.Driver {
	rulesDriverOnce.Do(func() {
		d := &sqlite.Driver{}
		for _, f := range ruleFunctions {
			d.MustRegisterDeterministicScalarFunction(f.name, f.nArgs, f.fn)
		}
		rulesDriverVal = d
	})
	return rulesDriverVal
}

// authState is one statement's authorizer and what it refused first. A
// connection runs one statement at a time, so no lock guards it.
type authState struct {
	// inner prefixes the names of the views that read the tables.
	inner  string
	denied string
}

// isInner is true for the name of an inner view.
func (a *authState) isInner(name string) bool {
	v, ok := strings.CutPrefix(name, a.inner)
	return ok && ruleViewNames[v]
}

var ruleViewNames = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range ruleViews {
		m[v.name] = true
	}
	return m
}()

// ruleFunctionNames are the functions a rule may call: SQLite's pure
// ones on text, numbers, times and JSON, its aggregates and window
// functions, and the rules' own. Left out are those that read the clock
// on their own or the random generator, make blobs, or tell about the
// connection or the build.
var ruleFunctionNames = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(`
		abs coalesce concat concat_ws glob ifnull iif if instr length like likely unlikely lower upper
		ltrim rtrim trim nullif printf format quote replace round sign substr substring typeof unicode
		min max
		avg count group_concat string_agg sum total
		row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
		date time datetime julianday unixepoch strftime timediff
		json json_extract json_array_length json_type json_valid -> ->>
		`) {
		m[f] = true
	}
	for _, f := range ruleFunctions {
		m[f.name] = true
	}
	return m
}()

// authorize is the policy. SQLite asks it while preparing a statement.
// Allowed: reading a column of a view of the contract (database temp), of
// an inner view from a view of the contract, of a table from an inner
// view (database main, the inner view's name as the fourth argument), or
// of a subquery or common table expression (no database). Refused:
// reading any table otherwise, writing, PRAGMA, ATTACH and every other
// statement. It records why; the statement then fails.
func (a *authState) authorize(action sqlite.AuthorizerActionCode, arg1, arg2, dbName,
	view string) sqlite.AuthorizerReturnCode {
	deny := func(format string, args ...any) sqlite.AuthorizerReturnCode {
		if a.denied == "" {
			a.denied = fmt.Sprintf(format, args...)
		}
		return sqlite.AuthorizerDeny
	}
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRecursive:
		return sqlite.AuthorizerOK
	case sqlite.AuthRead:
		switch {
		case dbName == "main" && a.isInner(view):
			return sqlite.AuthorizerOK
		case dbName == "temp" && ruleViewNames[arg1]:
			return sqlite.AuthorizerOK
		case dbName == "temp" && a.isInner(arg1) && ruleViewNames[view]:
			return sqlite.AuthorizerOK
		case dbName == "":
			return sqlite.AuthorizerOK
		}
		return deny("reading %s.%s: a rule reads only the views (%s)", dbName, arg1, strings.Join(RuleViews(), ", "))
	case sqlite.AuthFunction:
		if a.isInner(view) || ruleFunctionNames[strings.ToLower(arg2)] {
			return sqlite.AuthorizerOK
		}
		return deny("the function %s() is not one a rule may call", arg2)
	case sqlite.AuthPragma:
		return deny("PRAGMA %s", arg1)
	case sqlite.AuthAttach:
		return deny("ATTACH")
	case sqlite.AuthDetach:
		return deny("DETACH")
	case sqlite.AuthInsert, sqlite.AuthUpdate, sqlite.AuthDelete:
		return deny("writing to %s: rules only read", arg1)
	case sqlite.AuthCreateTable, sqlite.AuthCreateTempTable, sqlite.AuthCreateView, sqlite.AuthCreateTempView,
		sqlite.AuthCreateIndex, sqlite.AuthCreateTempIndex, sqlite.AuthCreateTrigger, sqlite.AuthCreateTempTrigger,
		sqlite.AuthCreateVTable:
		return deny("CREATE %s: rules only read", arg1)
	case sqlite.AuthTransaction, sqlite.AuthSavepoint:
		return deny("transactions: a rule is one SELECT")
	}
	return deny("statements of this kind (%d): a rule is one SELECT", action)
}
