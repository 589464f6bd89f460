package app

import (
	"slices"
	"testing"

	"github.com/kubegcd/kubegcd/internal/api"
)

// TestEveryControllerIsBuilt: each controller --controllers may name has
// a builder, and no builder names a controller the flag does not know.
func TestEveryControllerIsBuilt(t *testing.T) {
	for _, name := range api.Controllers {
		if controllerTable[name] == nil {
			t.Errorf("controller %s has no builder in controllerTable", name)
		}
	}
	for name := range controllerTable {
		if !slices.Contains(api.Controllers, name) {
			t.Errorf("controllerTable builds %s, which api.Controllers does not list", name)
		}
	}
}
