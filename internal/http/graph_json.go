package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// writeGraphJSON writes g as api.Graph, as writeJSON does, byte for byte,
// without encoding/json's reflection over every node and edge (a graph of
// 10,000 nodes is written in a quarter of the time), and in chunks as it
// is encoded: a graph of api.GraphFilteredMaxLimit nodes runs to tens of MB.
func (s *server) writeGraphJSON(w http.ResponseWriter, r *http.Request, g *db.Graph) {
	a := s.streamAnswer(w, r, "application/json", "answer")
	b := appendGraphJSON(make([]byte, 0, 2*answerChunk), g, func(b []byte) []byte {
		a.raw(b)
		return b[:0]
	})
	a.raw(bytes.TrimSuffix(b, []byte("\n")))
	a.end("\n")
}

// writeAppendedJSON answers 200 with b, which must be what writeJSON
// writes compact; an indented answer (for curl) indents it as writeJSON's
// encoder would.
func writeAppendedJSON(w http.ResponseWriter, r *http.Request, b []byte) {
	if indented(r) {
		var out bytes.Buffer
		out.Grow(2 * len(b))
		_ = json.Indent(&out, b, "", "  ") // b is valid JSON
		b = out.Bytes()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// The graph's rows are the API's nodes and edges field for field: these
// conversions stop compiling when one of them changes.
var (
	_ = api.GraphNode(db.GraphNode{})
	_ = api.GraphEdge(db.GraphEdge{})
)

// appendGraphJSON appends what json.Encoder.Encode writes of g as an
// api.Graph: the fields in api.Graph's, api.GraphNode's and
// api.GraphEdge's order, strings escaped as it escapes them, and a
// newline. It reads the database's rows directly: mapping them to the API's
// types first would copy every node. Once b holds answerChunk bytes, spill
// (when not nil) takes them, and what it returns is appended to; g's nodes
// and edges are then cleared as they are written, so that they are freed
// as the answer is spooled.
func appendGraphJSON(b []byte, g *db.Graph, spill func([]byte) []byte) []byte {
	more := func(b []byte) []byte {
		if spill != nil && len(b) >= answerChunk {
			return spill(b)
		}
		return b
	}
	b = append(b, `{"nodes":`...)
	if g.Nodes == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, n := range g.Nodes {
			if i > 0 {
				b = append(b, ',')
			}
			b = more(appendGraphNode(b, n))
			if spill != nil {
				g.Nodes[i] = db.GraphNode{}
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"edges":`...)
	if g.Edges == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, e := range g.Edges {
			if i > 0 {
				b = append(b, ',')
			}
			b = more(appendGraphEdge(b, e))
			if spill != nil {
				g.Edges[i] = db.GraphEdge{}
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, g.Truncated)
	return append(b, "}\n"...)
}

func appendGraphNode(b []byte, n db.GraphNode) []byte {
	b = append(b, `{"uid":`...)
	b = appendJSONString(b, n.UID)
	b = append(b, `,"apiVersion":`...)
	b = appendJSONString(b, n.APIVersion)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, n.Kind)
	b = append(b, `,"namespace":`...)
	b = appendJSONString(b, n.Namespace)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, n.Name)
	b = append(b, `,"missing":`...)
	b = strconv.AppendBool(b, n.Missing)
	b = append(b, `,"beingDeleted":`...)
	b = strconv.AppendBool(b, n.BeingDeleted)
	b = append(b, `,"deletingDependents":`...)
	b = strconv.AppendBool(b, n.DeletingDependents)
	b = append(b, `,"virtual":`...)
	b = strconv.AppendBool(b, n.Virtual)
	return append(b, '}')
}

func appendGraphEdge(b []byte, e db.GraphEdge) []byte {
	b = append(b, `{"dependent":`...)
	b = appendJSONString(b, e.Dependent)
	b = append(b, `,"owner":`...)
	b = appendJSONString(b, e.Owner)
	b = append(b, `,"controller":`...)
	b = strconv.AppendBool(b, e.Controller)
	b = append(b, `,"blockOwnerDeletion":`...)
	b = strconv.AppendBool(b, e.BlockOwnerDeletion)
	return append(b, '}')
}

// appendJSONString appends s quoted as encoding/json quotes it: a string
// of printable ASCII without a quote, a backslash or an HTML special as
// is, any other through encoding/json itself. It takes the api
// vocabulary's string types as they are.
func appendJSONString[S ~string](b []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// indented tells whether writeJSON indents its answer to r.
func indented(r *http.Request) bool {
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl/") || strings.HasPrefix(ua, "Wget/")
}
