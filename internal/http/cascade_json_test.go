package http

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/kubegcd/kubegcd/internal/api"
)

// appendCascadeJSON writes what json.Encoder does, byte for byte, whatever
// the strings hold and whichever fields are empty.
func TestAppendCascadeJSONIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	str := randomJSONStrings(r)
	target := func() api.Target {
		return api.Target{APIVersion: str(), Kind: str(), Namespace: str(), Name: str(), UID: str()}
	}
	for i := range 500 {
		c := &api.Cascade{Total: r.IntN(1000) - 1, Truncated: r.IntN(2) == 0}
		if i%50 != 1 {
			c.Items = []api.CascadeItem{}
		}
		if i%50 != 2 {
			c.ByKind = map[string]map[api.CascadeAction]int{}
		}
		if i%50 != 3 {
			c.BlockedBy = []api.CascadeBlocker{}
		}
		for range r.IntN(5) {
			c.Items = append(c.Items, api.CascadeItem{Target: target(), Action: api.CascadeAction(str()), Rule: str(), Propagation: str(),
				Reason: str(), Depth: r.IntN(5) - 1})
		}
		for range r.IntN(3) {
			if c.ByKind == nil {
				c.ByKind = map[string]map[api.CascadeAction]int{}
			}
			c.ByKind[str()] = map[api.CascadeAction]int{api.CascadeAction(str()): r.IntN(9), api.CascadeAction(str()): r.IntN(9)}
		}
		for range r.IntN(3) {
			b := api.CascadeBlocker{Target: target(), Owner: target(), Reason: str()}
			if r.IntN(2) == 0 {
				b.Finalizers = []string{str()}
			}
			c.BlockedBy = append(c.BlockedBy, b)
		}
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(c); err != nil {
			t.Fatal(err)
		}
		if got := appendCascadeJSON(nil, c); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("cascade %+v:\n got %q\nwant %q", c, got, want.Bytes())
		}
		if i%10 == 0 {
			checkAppendedJSON(t, c, appendCascadeJSON(nil, c))
		}
	}
}
