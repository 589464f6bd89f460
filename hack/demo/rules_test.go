package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/rules"
)

// seededMatches are, by built-in rule, what seed made for it to match, as
// "Kind namespace/name" ("Kind name" when cluster-scoped).
var seededMatches = map[string][]string{
	"unused-configmaps":      {"ConfigMap demo-cleanup/old-settings"},
	"unused-secrets":         {"Secret demo-cleanup/old-api-token"},
	"unused-pvcs":            {"PersistentVolumeClaim demo-cleanup/scratch-data"},
	"unused-serviceaccounts": {"ServiceAccount demo-cleanup/retired-robot"},
	"finished-jobs":          {"Job demo-cleanup/db-migrate-1"},
	"dangling-references":    {"Deployment demo-cleanup/reports"},
	"ttl-expired":            {"Namespace demo-preview"},
}

// loadDemoRules returns the rules demoRules makes: the built-ins, those
// it names overridden.
func loadDemoRules(ctx context.Context, dir string) ([]*rules.Rule, error) {
	if err := writeDemoRules(dir); err != nil {
		return nil, err
	}
	set, err := rules.Load(ctx, dir, rules.LoadOptions{})
	if err != nil {
		return nil, err
	}
	if len(set.Errors) > 0 {
		return nil, fmt.Errorf("the demo's rules: %v", set.Errors)
	}
	return set.Rules, nil
}

// TestDemoRules: the demo's rules file loads, and overrides each unused-*
// built-in and ttl-expired, which it sets to delete, and nothing else.
func TestDemoRules(t *testing.T) {
	rs, err := loadDemoRules(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var ids, overridden []string
	for _, r := range rs {
		ids = append(ids, r.ID)
		if r.Source.File != "" {
			overridden = append(overridden, r.ID)
		}
	}
	if want := slices.Sorted(maps.Keys(seededMatches)); !slices.Equal(slices.Sorted(slices.Values(ids)), want) {
		t.Errorf("rules %v, want the built-ins %v", ids, want)
	}
	want := []string{"unused-configmaps", "unused-secrets", "unused-pvcs", "unused-serviceaccounts", "ttl-expired"}
	if !slices.Equal(overridden, want) {
		t.Errorf("overridden %v, want %v", overridden, want)
	}
	for _, r := range rs {
		if (r.Mode == rules.ModeDelete) != (r.ID == "ttl-expired") {
			t.Errorf("%s: mode %s; only ttl-expired deletes", r.ID, r.Mode)
		}
	}
}

// checkRules evaluates each built-in rule, as the demo's rules file
// overrides it, on the demo's database, and checks that among the objects
// of demo-cleanup and demo-preview it matches exactly what seed made for
// it.
func checkRules(ctx context.Context, d demo) error {
	rs, err := loadDemoRules(ctx, filepath.Join(d.Dir, "rules-check"))
	if err != nil {
		return err
	}
	store, err := db.Open(ctx, filepath.Join(d.Dir, "kubegcd.db"), db.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer store.Close()
	sandbox, err := store.Rules().OpenSandbox(db.SandboxOptions{})
	if err != nil {
		return err
	}
	defer sandbox.Close()
	// The seeded objects by UID, read through the sandbox as a rule reads.
	objs, err := sandbox.Query(ctx, `SELECT uid, kind || ' ' || CASE WHEN namespace = '' THEN '' ELSE namespace || '/' END
		|| name AS reason FROM objects WHERE namespace = 'demo-cleanup' OR kind = 'Namespace' AND name = 'demo-preview'`,
		nil, time.Now())
	if err != nil {
		return err
	}
	keys := map[string]string{}
	for _, o := range objs {
		keys[o.UID] = o.Reason
	}
	e := &rules.Evaluator{Sandbox: sandbox}
	var errs []string
	for _, r := range rs {
		ms, _, err := e.Evaluate(ctx, r)
		if err != nil {
			return fmt.Errorf("rule %s: %w", r.ID, err)
		}
		var got []string
		for _, m := range ms {
			if k, ok := keys[m.UID]; ok {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		if want := seededMatches[r.ID]; !slices.Equal(got, want) {
			errs = append(errs, fmt.Sprintf("rule %s matches %q of the seeds, want %q", r.ID, got, want))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
