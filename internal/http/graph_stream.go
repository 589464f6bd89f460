package http

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

const (
	// graphStreamTimeout bounds a stream of the whole graph, however
	// steadily its client reads: its read transaction holds a snapshot,
	// past which the WAL cannot be checkpointed.
	graphStreamTimeout = 10 * time.Minute
	// DefaultGraphStreamStall is how long a stream of the whole graph
	// waits for its client to take data before it is cut.
	DefaultGraphStreamStall = 30 * time.Second
	// DefaultMaxGraphStreams is how many streams of the whole graph are
	// served at once: each holds a connection of the database's walks
	// (db.Options.StreamConns, as many by default) and an in-flight slot.
	DefaultMaxGraphStreams = 2
)

// graphStreamSlots is how many streams of the whole graph are served at
// once: maxStreams, but never more than half the in-flight slots, so that
// streams, which last, always leave room for the short requests.
func graphStreamSlots(maxStreams, maxInflight int) int {
	n := cmp.Or(maxStreams, DefaultMaxGraphStreams)
	if maxInflight > 0 {
		n = min(n, max(1, maxInflight/2))
	}
	return n
}

// stallWriter writes to a client under a deadline renewed at each write
// (a flush of the stream's buffer): a client that takes nothing for stall
// fails the write, which ends its stream, while one that reads slowly but
// steadily gets the whole graph. No write outlives end.
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

// streamGraph writes the whole ownership graph as the database reads it,
// node by node and edge by edge, in the JSON or DOT that /graph answers
// otherwise: its memory does not grow with the graph. An error once the
// answer has begun aborts the connection, so that a client never takes a
// cut answer for a whole one.
func (s *server) streamGraph(w http.ResponseWriter, r *http.Request, limit int, format string) {
	// A stream lasts as long as its client reads: only a few at once, each
	// on a connection of the database's walks, never of the short reads'.
	select {
	case s.graphStreams <- struct{}{}:
		defer func() { <-s.graphStreams }()
	default:
		w.Header().Set("Retry-After", "5")
		writeError(w, r, http.StatusTooManyRequests, fmt.Sprintf(
			"%d streams of the whole graph are served already, the most at once; retry, or filter it with ?namespace= or ?uid=",
			cap(s.graphStreams)))
		return
	}
	// A graph of millions takes longer than the API's 30 s: the stream has
	// its own bound, and ends sooner when the client goes or stops reading
	// (a write fails).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), graphStreamTimeout)
	defer cancel()
	sw := &stallWriter{w: w, rc: http.NewResponseController(w), stall: cmp.Or(s.GraphStreamStall, DefaultGraphStreamStall),
		end: time.Now().Add(graphStreamTimeout)}
	bw := bufio.NewWriterSize(sw, 64<<10)
	// written reports a failed write: the client left or stopped reading.
	written := func() error {
		_, err := bw.Write(nil)
		return err
	}
	started := false
	var walk db.GraphWalk
	var end func()
	if format == "dot" {
		d := &dotWriter{w: bw}
		walk = db.GraphWalk{
			Start: func(truncated bool) error {
				started = true
				w.Header().Set("Content-Type", "text/vnd.graphviz; charset=utf-8")
				w.WriteHeader(http.StatusOK)
				d.start(truncated, limit, graphStreamMaxLimit)
				return nil
			},
			Node: func(n db.GraphNode) error { d.node(n); return written() },
			Edge: func(e db.GraphEdge) error { d.edge(e); return written() },
		}
		end = d.end
	} else {
		// {"truncated": …, "nodes": [ … ], "edges": [ … ]}, an element a
		// line: the fields of api.Graph, in another order. A row converts
		// to its API type without a copy: they are the same fields.
		enc := json.NewEncoder(bw)
		first, edges := true, false
		element := func(v any) error {
			if !first {
				_ = bw.WriteByte(',') // bw's error sticks: Flush returns it
			}
			first = false
			return enc.Encode(v)
		}
		walk = db.GraphWalk{
			Start: func(truncated bool) error {
				started = true
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				if truncated {
					_, _ = bw.WriteString(`{"truncated":true,"nodes":[` + "\n")
				} else {
					_, _ = bw.WriteString(`{"truncated":false,"nodes":[` + "\n")
				}
				return nil
			},
			Node: func(n db.GraphNode) error { return element(api.GraphNode(n)) },
			Edge: func(e db.GraphEdge) error {
				if !edges {
					edges, first = true, true
					_, _ = bw.WriteString("],\"edges\":[\n")
				}
				return element(api.GraphEdge(e))
			},
		}
		end = func() {
			if !edges {
				_, _ = bw.WriteString("],\"edges\":[\n")
			}
			_, _ = bw.WriteString("]}\n")
		}
	}
	err := s.DB.WalkGraph(ctx, limit, walk)
	if err == nil {
		end()
		if err = bw.Flush(); err == nil {
			return
		}
	} else if !started {
		s.internalError(w, r, err)
		return
	}
	// The walk has ended, and with it its read transaction: its connection
	// is free before the client's is closed.
	attrs := []any{"remote", r.RemoteAddr, "request_id", middleware.GetReqID(r.Context())}
	switch werr := written(); {
	case sw.cut == "stalled":
		s.Logger.Info("graph stream cut: the client took no data", append(attrs, "for", sw.stall)...)
	case sw.cut == "ended" || errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.Logger.Info("graph stream cut: it reached its bound", append(attrs, "bound", graphStreamTimeout)...)
	case werr != nil:
		s.Logger.Debug("the client left while the graph streamed", append(attrs, "err", werr)...)
	default:
		s.Logger.Error("streaming the graph failed", append(attrs, "path", r.URL.Path, "err", err)...)
	}
	panic(http.ErrAbortHandler)
}
