package app

import (
	"context"
	"runtime/debug"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/cli"
	"github.com/kubegcd/kubegcd/internal/copies"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/reconcile/cleanup"
	"github.com/kubegcd/kubegcd/internal/rules"
)

// rulesBeat is the period of the rules' loop for the watchdog: a turn
// looks at the rule files every few seconds, and a pass lasts at most the
// sandbox's time limit.
const rulesBeat = 30 * time.Second

// newRules builds the cleanup rules' runner over the run's stores. It runs
// on every instance, leader or not; the rules that delete act only on the
// leader, through the controllers' applier.
func (d *daemonRun) newRules() *cleanup.Runner {
	return cleanup.New(cleanup.Options{
		Dir:        d.cfg.rulesDir,
		Store:      d.store.Rules(),
		Evaluator:  &rules.Evaluator{Sandbox: d.sandbox},
		LabelKept:  labelKept(d.cfg.mirrorLabels),
		Synced:     d.ing.Synced,
		CaughtUp:   d.ing.CaughtUp,
		Logger:     d.log.With("component", "rules"),
		Registerer: d.reg,
		Heartbeat:  d.loops.Loop("rules", rulesBeat),
		// The matches of a pass are garbage once stored. At GOGC 200 the
		// heap would keep three times their size until the next pass.
		PassesEnded: debug.FreeOSMemory,
		Acting: &cleanup.Acting{Applier: d.ctrls.applier, Live: d.ctrls.live, Store: d.store.Rules(),
			Copies: ruleCopies{d.store.Copies()}, TakeCopy: takeCopy(d.cfg.keepDeletedSecrets), Leading: d.lead.Leading,
			Workers: d.cfg.gcWorkers},
	})
}

// ruleCopies keeps the copies of what the rules delete in the database.
type ruleCopies struct{ store db.Copies }

func (c ruleCopies) Keep(ctx context.Context, cp cleanup.Copy) error {
	return c.store.PutDeletedCopy(ctx, &db.DeletedCopy{Target: cp.Target, Resource: cp.Resource,
		Controller: api.ControllerRules, RuleID: cp.RuleID, RuleHash: cp.RuleHash, TakenAt: cp.TakenAt,
		Object: cp.Object, SecretDataDropped: cp.SecretDataDropped})
}

func (c ruleCopies) Drop(ctx context.Context, uid string) error {
	return c.store.DropDeletedCopy(ctx, uid)
}

func (c ruleCopies) Spared(ctx context.Context, ruleID, ruleHash string) (map[string]bool, error) {
	return c.store.SparedUIDs(ctx, ruleID, ruleHash)
}

// takeCopy encodes a live object for its copy, a Secret's data dropped
// unless keepSecretData.
func takeCopy(keepSecretData bool) func(*unstructured.Unstructured) ([]byte, bool, error) {
	return func(obj *unstructured.Unstructured) ([]byte, bool, error) {
		return copies.Take(obj, keepSecretData)
	}
}

// Local is what the client commands do without a daemon: rules check
// reads a rules file as run would load it.
var Local = cli.Local{CheckRules: func(file string, data []byte) []api.RuleError {
	return cleanup.Check(file, data, nil)
}}

// labelKept says whether the mirror keeps a label key of some resource:
// one of the keys always kept, or one --mirror-labels names.
func labelKept(l ingest.KeyAllowList) func(string) bool {
	return func(key string) bool {
		if slices.Contains(db.KeptLabelKeys, key) {
			return true
		}
		for _, keys := range l {
			if slices.Contains(keys, key) || slices.Contains(keys, "*") {
				return true
			}
		}
		return false
	}
}
