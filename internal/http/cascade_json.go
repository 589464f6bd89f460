package http

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/kubegcd/kubegcd/internal/api"
)

// writeCascadeJSON writes c as writeJSON does, byte for byte, its items
// without encoding/json's reflection: a preview of 10,000 objects is
// written in a fraction of the time.
func writeCascadeJSON(w http.ResponseWriter, r *http.Request, c *api.Cascade) {
	writeAppendedJSON(w, r, appendCascadeJSON(make([]byte, 0, 256+300*len(c.Items)), c))
}

// appendCascadeJSON appends what json.Encoder.Encode writes of c: the
// items field by field in api.CascadeItem's order, the few fields after them
// through encoding/json, and a newline.
func appendCascadeJSON(b []byte, c *api.Cascade) []byte {
	b = append(b, `{"items":`...)
	if c.Items == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, it := range c.Items {
			if i > 0 {
				b = append(b, ',')
			}
			t := it.Target
			b = append(b, `{"target":{"apiVersion":`...)
			b = appendJSONString(b, t.APIVersion)
			b = append(b, `,"kind":`...)
			b = appendJSONString(b, t.Kind)
			if t.Namespace != "" {
				b = append(b, `,"namespace":`...)
				b = appendJSONString(b, t.Namespace)
			}
			b = append(b, `,"name":`...)
			b = appendJSONString(b, t.Name)
			b = append(b, `,"uid":`...)
			b = appendJSONString(b, t.UID)
			b = append(b, `},"action":`...)
			b = appendJSONString(b, it.Action)
			if it.Rule != "" {
				b = append(b, `,"rule":`...)
				b = appendJSONString(b, it.Rule)
			}
			if it.Propagation != "" {
				b = append(b, `,"propagation":`...)
				b = appendJSONString(b, it.Propagation)
			}
			b = append(b, `,"reason":`...)
			b = appendJSONString(b, it.Reason)
			b = append(b, `,"depth":`...)
			b = strconv.AppendInt(b, int64(it.Depth), 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(c.Total), 10)
	b = append(b, `,"byKind":`...)
	b = appendMarshal(b, c.ByKind)
	b = append(b, `,"blockedBy":`...)
	b = appendMarshal(b, c.BlockedBy)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, c.Truncated)
	return append(b, "}\n"...)
}

// appendMarshal appends v, which holds only strings, numbers and booleans
// (and so always marshals), as encoding/json writes it.
func appendMarshal(b []byte, v any) []byte {
	j, _ := json.Marshal(v)
	return append(b, j...)
}
