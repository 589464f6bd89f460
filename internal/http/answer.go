package http

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

const (
	// answerChunk is the size of the buffers an answer is encoded and
	// sent through. A client that takes nothing holds one of them, its
	// spool file and the socket's buffers in the kernel.
	answerChunk = 64 << 10
	// maxWideReads is how many wide answers (/lint, a filtered /graph,
	// /audit, /pending) are read from the database and mapped at once.
	// Each costs memory that grows with its limit, several times what it
	// keeps to send: read all at once, the in-flight slots' worth would
	// cost that many times over. Two keep both of two cores busy.
	maxWideReads = 2
	// answerSendTimeout bounds the sending of a streamed answer read
	// whole from the database, however steadily its client reads: the
	// daemon's http.Server gives any answer as long (WriteTimeout), and a
	// streamed answer's deadlines replace the server's.
	answerSendTimeout = 2 * time.Minute
)

// wideRead runs read, which reads a wide answer from the database, in one
// of the server's maxWideReads slots, waiting for one as long as ctx
// lasts (the request's time bound). The slot is freed before the answer is
// sent: a client that reads slowly or not at all holds its answer's spool,
// not a slot.
func (s *server) wideRead(ctx context.Context, read func() error) error {
	if slots := s.answers.wideReads; slots != nil {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-ctx.Done():
			return fmt.Errorf("waiting for one of the %d wide reads at once: %w", cap(slots), ctx.Err())
		}
	}
	return read()
}

// stallWriter writes to a client under a deadline renewed at each write
// (a flush of the stream's buffer): a client that takes nothing for stall
// fails the write, which ends its stream, while one that reads slowly but
// steadily gets the whole answer. No write outlives end.
type stallWriter struct {
	w     io.Writer
	rc    *http.ResponseController
	stall time.Duration
	end   time.Time
	// cut says why the failed write failed, when its deadline passed:
	// "stalled" or "ended".
	cut string
}

func (s *stallWriter) Write(p []byte) (int, error) {
	deadline, why := time.Now().Add(s.stall), "stalled"
	if !deadline.Before(s.end) {
		deadline, why = s.end, "ended"
	}
	// Unsupported only where no connection is written to (a test's
	// recorder): nothing can stall there.
	_ = s.rc.SetWriteDeadline(deadline)
	n, err := s.w.Write(p)
	if err != nil && !time.Now().Before(deadline) {
		s.cut = why
	}
	return n, err
}

// answerStream encodes an answer, then sends it. The encoding goes in
// chunks of answerChunk into a spool as it is made, so that it never
// exists whole in memory and the items it was made from can be freed
// while it is; the spool is sent once whole, under the stall bound
// (--graph-stream-stall-timeout), so a client that stops reading holds a
// spool file, not the daemon's memory, and is cut. JSON written to it is
// compact, as encoding/json writes it; for a person at a terminal it is
// indented as writeJSON indents, byte for byte.
type answerStream struct {
	s           *server
	w           http.ResponseWriter
	r           *http.Request
	contentType string
	// what names the answer in the log.
	what string
	sp   *spool
	bw   *bufio.Writer // over sp; its first error sticks
	// out takes the compact JSON: bw, or an indenter over it.
	out io.Writer
	// buf and enc encode one value at a time.
	buf bytes.Buffer
	enc *json.Encoder
}

// streamAnswer starts the answer to r, of contentType. Nothing is sent
// before end.
func (s *server) streamAnswer(w http.ResponseWriter, r *http.Request, contentType, what string) *answerStream {
	a := &answerStream{s: s, w: w, r: r, contentType: contentType, what: what, sp: s.answers.spool()}
	a.bw = bufio.NewWriterSize(a.sp, answerChunk)
	a.out = a.bw
	if contentType == "application/json" && indented(r) {
		a.out = &jsonIndenter{w: a.bw}
	}
	a.enc = json.NewEncoder(&a.buf)
	return a
}

// stall is how long a streamed answer waits for its client to take data.
func (s *server) stall() time.Duration {
	if s.GraphStreamStall > 0 {
		return s.GraphStreamStall
	}
	return DefaultGraphStreamStall
}

// raw writes text, which is compact JSON in a JSON answer.
func (a *answerStream) raw(b []byte) { _, _ = a.out.Write(b) }

func (a *answerStream) rawString(s string) { _, _ = io.WriteString(a.out, s) }

// value writes v as encoding/json does, compact.
func (a *answerStream) value(v any) {
	a.buf.Reset()
	if err := a.enc.Encode(v); err != nil {
		// The API's types always encode: this is a bug, found before a
		// byte of v is sent.
		panic(fmt.Sprintf("encoding %T: %v", v, err))
	}
	a.raw(bytes.TrimSuffix(a.buf.Bytes(), []byte("\n")))
}

// failed tells that the spool refused a write: the rest of the answer
// need not be encoded.
func (a *answerStream) failed() bool {
	_, err := a.bw.Write(nil)
	return err != nil
}

// end writes trailer as it is (writeJSON ends an answer with a newline,
// which no indenter keeps), then sends the answer: a 200 with what was
// spooled, or, when the spool refused it, an error, as nothing was sent
// yet.
func (a *answerStream) end(trailer string) {
	defer a.sp.close()
	_, _ = a.bw.WriteString(trailer)
	if err := a.bw.Flush(); err != nil {
		if errors.Is(err, errSpoolFull) {
			a.w.Header().Set("Retry-After", "5")
			writeError(a.w, a.r, http.StatusTooManyRequests, fmt.Sprintf(
				"the large answers being sent take the %d MiB they may already; retry", spoolBudget>>20))
			return
		}
		a.s.internalError(a.w, a.r, err)
		return
	}
	a.w.Header().Set("Content-Type", a.contentType)
	a.w.WriteHeader(http.StatusOK)
	sw := &stallWriter{w: a.w, rc: http.NewResponseController(a.w), stall: a.s.stall(),
		end: time.Now().Add(answerSendTimeout)}
	if _, err := io.CopyBuffer(sw, a.sp.reader(), make([]byte, answerChunk)); err != nil {
		var werr error
		if sw.cut != "" || !errors.Is(err, errSpoolRead) {
			werr = err
		}
		a.s.abortStream(a.r, a.what, sw, werr, err, answerSendTimeout)
	}
}

// abortStream logs why a stream under way (what: "graph stream",
// "answer") was cut, and closes its connection (http.ErrAbortHandler) so
// that a client never takes a cut answer for a whole one. writeErr is the
// failed write's error, err what else cut it; bound is the stream's time
// bound.
func (s *server) abortStream(r *http.Request, what string, sw *stallWriter, writeErr, err error, bound time.Duration) {
	attrs := []any{"path", r.URL.Path, "remote", r.RemoteAddr, "request_id", middleware.GetReqID(r.Context())}
	switch {
	case sw.cut == "stalled":
		s.Logger.Info(what+" cut: the client took no data", append(attrs, "for", sw.stall)...)
	case sw.cut == "ended" || errors.Is(err, context.DeadlineExceeded):
		s.Logger.Info(what+" cut: it reached its bound", append(attrs, "bound", bound)...)
	case writeErr != nil:
		s.Logger.Debug("the client left during the "+what, append(attrs, "err", writeErr)...)
	default:
		s.Logger.Error(what+" failed", append(attrs, "err", err)...)
	}
	panic(http.ErrAbortHandler)
}

// jsonIndenter writes the compact JSON written to it as json.Indent with
// no prefix and an indent of two spaces would, as it comes: an answer to a
// person at a terminal is indented without being held whole. It knows
// strings and punctuation only, as what it takes is encoding/json's
// compact output.
type jsonIndenter struct {
	w                 *bufio.Writer // its first error sticks
	depth             int
	inString, escaped bool
	needIndent        bool
}

func (d *jsonIndenter) Write(p []byte) (int, error) {
	for _, c := range p {
		if d.inString {
			_ = d.w.WriteByte(c)
			switch {
			case d.escaped:
				d.escaped = false
			case c == '\\':
				d.escaped = true
			case c == '"':
				d.inString = false
			}
			continue
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		// An object or array opened: its first element goes on a new
		// line, and an empty one stays {} or [].
		if d.needIndent && c != '}' && c != ']' {
			d.needIndent = false
			d.depth++
			d.newline()
		}
		switch c {
		case '"':
			d.inString = true
			_ = d.w.WriteByte(c)
		case '{', '[':
			d.needIndent = true
			_ = d.w.WriteByte(c)
		case ',':
			_ = d.w.WriteByte(c)
			d.newline()
		case ':':
			_, _ = d.w.WriteString(": ")
		case '}', ']':
			if d.needIndent {
				d.needIndent = false
			} else {
				d.depth--
				d.newline()
			}
			_ = d.w.WriteByte(c)
		default:
			_ = d.w.WriteByte(c)
		}
	}
	_, err := d.w.Write(nil)
	return len(p), err
}

func (d *jsonIndenter) newline() {
	_ = d.w.WriteByte('\n')
	for range d.depth {
		_, _ = d.w.WriteString("  ")
	}
}

// streamJSONList writes an answer whose first field, named field, is the
// list items, as writeJSON would write it, one element at a time: rest is
// the answer as it would be without items (the list empty, or null when
// items is nil), and each maps an item to what the list holds. Each item
// is cleared once written, so that the items are freed as the answer is
// spooled.
func streamJSONList[T any](a *answerStream, rest any, field string, items []T, each func(*T) any) {
	tail, err := json.Marshal(rest)
	if err != nil {
		panic(fmt.Sprintf("encoding %T: %v", rest, err))
	}
	head := `{"` + field + `":[`
	if items == nil {
		a.raw(tail)
		a.end("\n")
		return
	}
	if !bytes.HasPrefix(tail, []byte(head+"]")) {
		panic(fmt.Sprintf("%T does not start with an empty %q", rest, field))
	}
	a.rawString(head)
	var zero T
	for i := range items {
		if i > 0 {
			a.rawString(",")
		}
		a.value(each(&items[i]))
		items[i] = zero
		if a.failed() {
			break
		}
	}
	a.raw(tail[len(head):])
	a.end("\n")
}
