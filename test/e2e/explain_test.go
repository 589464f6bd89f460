package e2e

// /objects/{uid} against the real kube-apiserver: one answer that links
// what /stuck, /lint and the object's history say of it.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubegcd/kubegcd/internal/api"
)

type explainReply struct {
	Stuck   *api.StuckItem    `json:"stuck"`
	Lint    []api.LintFinding `json:"lint"`
	History struct {
		Items []struct {
			Event             string     `json:"event"`
			Finalizers        []string   `json:"finalizers"`
			DeletionTimestamp *time.Time `json:"deletionTimestamp"`
		} `json:"items"`
		Truncated bool `json:"truncated"`
	} `json:"history"`
	Links map[string]string `json:"links"`
	Why   string            `json:"why"`
}

// TestObjectExplanation: a ConfigMap held by a finalizer, deleted, whose
// only ownerReference dangles. /objects/{uid} shows its deletion's
// blockers, the lint finding, its history and the links, each link
// answering.
func TestObjectExplanation(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "explain-"+string(uuid.NewUUID())[:8])
	const hold = "example.com/hold"
	ghost := uuid.NewUUID()
	cm, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held",
		Finalizers:      []string{hold},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: ghost}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropFinalizers(t, corev1.SchemeGroupVersion.WithResource("configmaps"), ns, "held") })
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	d := daemons.Start(t, "")
	d.WaitReady(t, 60*time.Second)
	uid := string(cm.UID)
	var got explainReply
	eventually(t, 30*time.Second, func() error {
		got = explainReply{}
		d.GetJSON(t, "/objects/"+uid, http.StatusOK, &got)
		if got.Stuck == nil {
			return fmt.Errorf("no stuck in /objects/%s yet: %s", uid, got.Why)
		}
		return nil
	})
	if b := finalizerBlocker(got.Stuck.Blockers, hold); b == nil || !strings.Contains(b.Reason, "the controller of example.com") {
		t.Errorf("stuck blockers %+v: want the finalizer %s, removed by the controller of example.com", got.Stuck.Blockers, hold)
	}
	if got.Stuck.Target.UID != uid || got.Stuck.State != api.StateFinalizing {
		t.Errorf("stuck target %v state %q, want %s %q", got.Stuck.Target, got.Stuck.State, uid, api.StateFinalizing)
	}
	if len(got.Lint) != 1 || got.Lint[0].Rule != api.LintDanglingOwner.ID || got.Lint[0].OwnerReference.UID != string(ghost) {
		t.Errorf("lint = %+v, want one %s finding about %s", got.Lint, api.LintDanglingOwner.ID, ghost)
	}
	if n := len(got.History.Items); n == 0 || got.History.Items[0].Event != "created" || got.History.Items[n-1].DeletionTimestamp == nil {
		t.Errorf("history = %+v, want it created and, last, being deleted", got.History)
	}
	if !strings.Contains(got.Why, "It is held by its finalizer "+hold) {
		t.Errorf("why = %q, want it to name the finalizer that holds it", got.Why)
	}
	for name, want := range map[string]string{"history": "/objects/" + uid + "/history", "cascade": "/objects/" + uid + "/cascade",
		"graph": "/graph?uid=" + uid} {
		if got.Links[name] != want {
			t.Errorf("links[%s] = %q, want %q", name, got.Links[name], want)
		}
		if code, body, err := d.Get(want); err != nil || code != http.StatusOK {
			t.Errorf("GET %s: %d %v %s", want, code, err, body)
		}
	}
}
