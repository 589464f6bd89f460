package http

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
)

// graphStreamTimeout bounds a stream of the whole graph.
const graphStreamTimeout = 10 * time.Minute

// streamGraph writes the whole ownership graph as the database reads it,
// node by node and edge by edge, in the JSON or DOT that /graph answers
// otherwise: its memory does not grow with the graph. An error once the
// answer has begun aborts the connection, so that a client never takes a
// cut answer for a whole one.
func (s *server) streamGraph(w http.ResponseWriter, r *http.Request, limit int, format string) {
	// A graph of millions takes longer than the API's 30 s: the stream has
	// its own deadline, and ends sooner when the client goes (a write
	// fails).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), graphStreamTimeout)
	defer cancel()
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(graphStreamTimeout))
	bw := bufio.NewWriterSize(w, 64<<10)
	// written reports a failed write: the client left.
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
		// line: the fields of Graph, in another order.
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
			Node: func(n db.GraphNode) error { return element(n) },
			Edge: func(e db.GraphEdge) error {
				if !edges {
					edges, first = true, true
					_, _ = bw.WriteString("],\"edges\":[\n")
				}
				return element(e)
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
		err = bw.Flush()
		if err != nil {
			s.Logger.Debug("the client left while the graph streamed", "err", err)
		}
		return
	}
	if !started {
		s.internalError(w, r, err)
		return
	}
	if written() != nil {
		s.Logger.Debug("the client left while the graph streamed", "err", err)
	} else {
		s.Logger.Error("streaming the graph failed", "path", r.URL.Path, "err", err)
	}
	panic(http.ErrAbortHandler)
}
