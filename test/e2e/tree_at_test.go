package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/api"
)

// TestTreeAtShowsWhatTheAPIShows: `kubegcd tree --at` draws what /graph?at=
// answers for that time. Before the objects existed the API's graph is
// empty, and the CLI says the object did not exist then (exit 1) instead
// of drawing it as it is now; a time in the future is refused by both, the
// CLI with a usage error (exit 2), the API with a 400.
func TestTreeAtShowsWhatTheAPIShows(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "tree-at")
	cms := kube.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := daemons.Start(t, "", "--dry-run=true", "--controllers=ttl")
	d.WaitReady(t, 60*time.Second)
	graphAt := func(at time.Time) api.Graph {
		t.Helper()
		var g api.Graph
		d.GetJSON(t, "/graph?uid="+string(owner.UID)+"&at="+url.QueryEscape(at.UTC().Format(time.RFC3339Nano)), http.StatusOK, &g)
		return g
	}
	// Now (a second ahead of the mirror's history rows): both objects.
	eventually(t, 30*time.Second, func() error {
		if g := graphAt(time.Now()); len(g.Nodes) != 2 {
			return fmt.Errorf("graph now: %+v, want owner and dep", g.Nodes)
		}
		return nil
	})
	cliOK(t, d, []string{"ConfigMap/owner ◀", "└─ConfigMap/dep", "exists"},
		"tree", "configmap/owner", "-n", ns, "--at", time.Now().UTC().Format(time.RFC3339Nano))

	// 2020: the API's graph is empty, and the CLI says why.
	const past = "2020-01-01T00:00:00Z"
	pastTime, _ := time.Parse(time.RFC3339, past)
	if g := graphAt(pastTime); len(g.Nodes) != 0 {
		t.Fatalf("/graph?at=%s: %+v, want no node", past, g.Nodes)
	}
	cliFails(t, 1, []string{"ConfigMap " + ns + "/owner did not exist at " + past, "history first saw it at"},
		"tree", "configmap/owner", "-n", ns, "--at", past, "--server", d.ClientURL())

	// The future: refused by both.
	const future = "2999-01-01T00:00:00Z"
	var e map[string]any
	d.GetJSON(t, "/graph?uid="+string(owner.UID)+"&at="+future, http.StatusBadRequest, &e)
	cliFails(t, 2, []string{"--at", "in the future"}, "tree", "configmap/owner", "-n", ns, "--at", future, "--server", d.ClientURL())
}
