package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/dbfault"
)

// statusResources is what these tests read of /status.
type statusResources struct {
	Synced    bool `json:"synced"`
	Resources []struct {
		Group    string `json:"group"`
		Resource string `json:"resource"`
		Synced   bool   `json:"synced"`
	} `json:"resources"`
}

// resourceSynced reads whether /status calls a resource synced.
func resourceSynced(t *testing.T, d *daemon, group, resource string) (bool, error) {
	t.Helper()
	var st statusResources
	d.GetJSON(t, "/status", http.StatusOK, &st)
	for _, r := range st.Resources {
		if r.Group == group && r.Resource == resource {
			return r.Synced, nil
		}
	}
	return false, fmt.Errorf("/status lists no resource %q in group %q", resource, group)
}

// TestMirrorRecoversFromFailedWrites holds the database's write lock from
// outside, past the daemon's busy timeout, while ConfigMaps are created,
// updated and deleted: the batch carrying those events cannot commit. The
// resource must then show unsynced, and the mirror must still end up as the
// cluster is (a watch resumed after the lost events never sees them again),
// synced again, with /readyz, /status and the resources.synced column
// agreeing.
func TestMirrorRecoversFromFailedWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "ingest-faults")
	d := daemons.Start(t, "", "--controllers=")
	d.WaitReady(t, 60*time.Second)
	store := d.DB(t)
	cms := kube.CoreV1().ConfigMaps(ns)
	create := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}

	var kept, gone []*corev1.ConfigMap
	for i := range 3 {
		kept = append(kept, create(fmt.Sprintf("kept-%d", i)))
		gone = append(gone, create(fmt.Sprintf("gone-%d", i)))
	}
	for _, cm := range append(kept, gone...) {
		within(t, cm.Name+" created", func() error { return matchesMirror(store, cm, "v1", "ConfigMap") })
	}

	release := dbfault.HoldWriteLock(t, d.DBPath)
	var added []*corev1.ConfigMap
	for i := range 3 {
		added = append(added, create(fmt.Sprintf("added-%d", i)))
	}
	for i, cm := range kept {
		cm.Labels = map[string]string{"changed": "during-the-fault"}
		updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kept[i] = updated
	}
	for _, cm := range gone {
		if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The batch fails once the busy timeout (10 s) runs out; from then on
	// the mirror of configmaps is not live and must not be called so.
	eventually(t, 60*time.Second, func() error {
		code, body, err := d.Get("/readyz")
		if err != nil {
			return err
		}
		if code != http.StatusServiceUnavailable {
			return fmt.Errorf("/readyz: %d %s, want 503 once the write failed", code, body)
		}
		if synced, err := resourceSynced(t, d, "", "configmaps"); err != nil || synced {
			return fmt.Errorf("/status: configmaps synced=%v (%v), want false", synced, err)
		}
		return nil
	})
	release()

	eventually(t, 60*time.Second, func() error {
		for _, cm := range append(added, kept...) {
			if err := matchesMirror(store, cm, "v1", "ConfigMap"); err != nil {
				return err
			}
		}
		for _, cm := range gone {
			if err := absentFromMirror(store, cm.UID); err != nil {
				return fmt.Errorf("%s: %w", cm.Name, err)
			}
		}
		return nil
	})

	// Live again, and every account of it says so: /readyz, /status, and
	// the column, which must not be left at 0 by the failure.
	eventually(t, 30*time.Second, func() error {
		if code, body, err := d.Get("/readyz"); err != nil || code != http.StatusOK {
			return fmt.Errorf("/readyz: %d %s %v", code, body, err)
		}
		var st statusResources
		d.GetJSON(t, "/status", http.StatusOK, &st)
		stats, err := store.Objects().ResourceStats(ctx)
		if err != nil {
			return err
		}
		column := map[string]bool{}
		for _, s := range stats {
			column[s.Group+"/"+s.Resource.Resource] = s.Synced
		}
		if !st.Synced {
			return fmt.Errorf("/status: synced=false")
		}
		for _, r := range st.Resources {
			if got := column[r.Group+"/"+r.Resource]; !r.Synced || !got {
				return fmt.Errorf("%s/%s: synced %v in /status, %v in resources.synced; want both true", r.Group, r.Resource, r.Synced, got)
			}
		}
		return nil
	})
	series := `kubegcd_ingest_relists_total{reason="write-failed",resource="configmaps"}`
	if got := sample(t, d, series); got < 1 {
		t.Errorf("%s = %v, want at least 1", series, got)
	}
}

// sample reads one series (name and labels as the exposition writes them)
// from the daemon's /metrics; 0 when it is absent.
func sample(t *testing.T, d *daemon, series string) float64 {
	t.Helper()
	code, body, err := d.Get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("/metrics: %q: %v", line, err)
			}
			return f
		}
	}
	return 0
}
