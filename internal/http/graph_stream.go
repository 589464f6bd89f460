package http

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

const (
	// graphStreamTimeout bounds a stream of the whole graph, however
	// steadily its client reads: its read transaction holds a snapshot,
	// past which the WAL cannot be checkpointed.
	graphStreamTimeout = 10 * time.Minute
	// DefaultGraphStreamStall is how long a streamed answer (the whole
	// graph, and the large answers read whole: see answerStream) waits
	// for its client to take data before it is cut.
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
		writeError(w, r, http.StatusTooManyRequests, fmt.Sprintf("%d streams of the whole graph are served already, "+
			"the most at once; retry, or filter it with ?namespace= or ?uid=", cap(s.graphStreams)))
		return
	}
	// A graph of millions takes longer than the API's 30 s: the stream has
	// its own bound, and ends sooner when the client goes or stops reading
	// (a write fails).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), graphStreamTimeout)
	defer cancel()
	sw := &stallWriter{w: w, rc: http.NewResponseController(w), stall: s.stall(),
		end: time.Now().Add(graphStreamTimeout)}
	bw := bufio.NewWriterSize(sw, answerChunk)
	started := false
	// start writes the answer's header, once the walk knows it can begin.
	start := func(contentType string) {
		started = true
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
	}
	walk, end := graphJSONWalk(bw, start)
	if format == "dot" {
		walk, end = graphDOTWalk(bw, start, limit)
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
	_, werr := bw.Write(nil)
	s.abortStream(r, "graph stream", sw, werr, errors.Join(err, ctx.Err()), graphStreamTimeout)
}

// writeFailed reports a failed write to bw: the client left or stopped
// reading. bufio's error sticks.
func writeFailed(bw *bufio.Writer) error {
	_, err := bw.Write(nil)
	return err
}

// graphDOTWalk writes the walk's graph to bw in DOT, and end closes it.
func graphDOTWalk(bw *bufio.Writer, start func(contentType string), limit int) (walk db.GraphWalk, end func()) {
	d := &dotWriter{w: bw}
	return db.GraphWalk{
		Start: func(truncated bool) error {
			start("text/vnd.graphviz; charset=utf-8")
			d.start(truncated, limit, graphStreamMaxLimit)
			return nil
		},
		Node: func(n db.GraphNode) error { d.node(n); return writeFailed(bw) },
		Edge: func(e db.GraphEdge) error { d.edge(e); return writeFailed(bw) },
	}, d.end
}

// graphJSONWalk writes the walk's graph to bw as {"truncated": …,
// "nodes": [ … ], "edges": [ … ]}, an element a line: the fields of
// api.Graph, in another order. A row converts to its API type without a
// copy: they are the same fields. end closes it.
func graphJSONWalk(bw *bufio.Writer, start func(contentType string)) (walk db.GraphWalk, end func()) {
	enc := json.NewEncoder(bw)
	first, edges := true, false
	element := func(v any) error {
		if !first {
			_ = bw.WriteByte(',') // bw's error sticks: Flush returns it
		}
		first = false
		return enc.Encode(v)
	}
	return db.GraphWalk{
			Start: func(truncated bool) error {
				start("application/json")
				_, _ = fmt.Fprintf(bw, "{\"truncated\":%t,\"nodes\":[\n", truncated)
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
		}, func() {
			if !edges {
				_, _ = bw.WriteString("],\"edges\":[\n")
			}
			_, _ = bw.WriteString("]}\n")
		}
}
