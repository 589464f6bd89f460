package cleanup

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/kubegcd/kubegcd/internal/rules"
)

// dirFingerprint is what a look at the rules directory saw of each rule
// file, by name: a file added, removed, replaced or edited changes it.
type dirFingerprint map[string]fileFingerprint

type fileFingerprint struct {
	size  int64
	inode uint64
	sum   [sha256.Size]byte
}

// fingerprint looks at the files of dir that rules.Load reads: *.yaml and
// *.yml, not hidden, followed through symbolic links (a ConfigMap's
// volume links each file into a hidden directory it swaps). A directory
// that does not exist holds nothing.
func fingerprint(dir string) (dirFingerprint, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return dirFingerprint{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := dirFingerprint{}
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if strings.HasPrefix(name, ".") || ext != ".yaml" && ext != ".yml" {
			continue
		}
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path)
		if err != nil || fi.IsDir() {
			// A link to nothing, or a directory: Load says what of it.
			out[name] = fileFingerprint{size: -1}
			continue
		}
		f := fileFingerprint{size: fi.Size()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			f.inode = st.Ino
		}
		if data, err := os.ReadFile(path); err == nil {
			f.sum = sha256.Sum256(data)
		}
		out[name] = f
	}
	return out, nil
}

// look reads the rules again when the directory's files changed since
// the last look, or at the first.
func (r *Runner) look(ctx context.Context) {
	files, err := fingerprint(r.opts.Dir)
	if err != nil {
		r.mu.Lock()
		failedBefore := r.dirErr != nil
		r.dirErr = err
		r.mu.Unlock()
		if !failedBefore {
			r.log.Error("reading the rules directory; the rules loaded before keep running", "dir", r.opts.Dir,
				"err", err)
		}
		if !r.looked {
			// Nothing loaded yet: the built-ins run meanwhile.
			r.apply(ctx, &rules.Set{Rules: rules.Builtins()}, false)
		}
		return
	}
	if r.looked && r.dirErrCleared() && maps.Equal(files, r.files) {
		return
	}
	first := !r.looked
	set, err := rules.Load(ctx, r.opts.Dir, rules.LoadOptions{ParseOptions: rules.ParseOptions{LabelKept: r.opts.LabelKept},
		Check: r.check})
	if err != nil {
		// The directory went between the two reads: the next look says.
		return
	}
	r.files = files
	if !first {
		r.log.Info("the rule files changed: rules reloaded", "dir", r.opts.Dir)
	}
	r.apply(ctx, set, true)
}

// dirErrCleared forgets a failure to read the directory and reports
// whether there was none.
func (r *Runner) dirErrCleared() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	had := r.dirErr != nil
	r.dirErr = nil
	return !had
}

// apply makes set the rules that run. A rule whose text did not change
// keeps its passes and its schedule; a new or changed one runs at once.
// With fromDir, the matches of rules no longer loaded are dropped.
func (r *Runner) apply(ctx context.Context, set *rules.Set, fromDir bool) {
	counts, err := r.opts.Store.CountRuleMatches(ctx, "")
	if err != nil {
		r.log.Warn("counting the rules' stored matches", "err", err)
	}
	r.mu.Lock()
	prev := map[string]*ruleState{}
	for _, st := range r.rules {
		prev[st.rule.ID] = st
	}
	states := make([]*ruleState, 0, len(set.Rules))
	ids := make([]string, 0, len(set.Rules))
	for _, rule := range set.Rules {
		st := &ruleState{rule: rule, count: counts[rule.ID]}
		if old, ok := prev[rule.ID]; ok {
			st.last, st.matchedAt, st.count = old.last, old.matchedAt, old.count
			if old.rule.Hash == rule.Hash {
				st.next = old.next
			}
			delete(prev, rule.ID)
		}
		if st.next.IsZero() && rule.Schedule != "" {
			st.next = rule.NextPass(r.opts.Now()) // a scheduled rule waits for its first time
		}
		states = append(states, st)
		ids = append(ids, rule.ID)
	}
	r.rules, r.errs = states, set.Errors
	if fromDir {
		r.loadedAt, r.fileList = r.opts.Now(), set.Files
	}
	r.mu.Unlock()

	for id := range prev {
		r.metrics.forget(id)
	}
	for _, st := range states {
		r.metrics.matches.WithLabelValues(st.rule.ID).Set(float64(st.count.Matches))
		r.metrics.findings.WithLabelValues(st.rule.ID).Set(float64(st.count.Findings))
	}
	r.metrics.refused.Set(float64(len(set.Errors)))
	if fromDir {
		if err := r.opts.Store.KeepRuleMatches(ctx, ids); err != nil {
			r.log.Warn("dropping the matches of rules no longer loaded", "err", err)
		}
	}
	builtIn := 0
	for _, rule := range set.Rules {
		if rule.Source.BuiltIn {
			builtIn++
		}
	}
	r.log.Info("rules loaded", "dir", r.opts.Dir, "files", len(set.Files), "rules", len(set.Rules),
		"built_in", builtIn, "refused", len(set.Errors), "ids", strings.Join(slices.Sorted(slices.Values(ids)), ","))
	for _, e := range set.Errors {
		r.log.Warn("rule refused; the other rules run", "file", e.File, "line", e.Line, "rule", e.RuleID,
			"err", e.Error())
	}
}
