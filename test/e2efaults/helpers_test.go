package e2efaults

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

var eventually = e2eutil.Eventually

// stable fails the test if fn does not hold throughout d.
func stable(t *testing.T, d time.Duration, fn func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := fn(); err != nil {
			t.Fatal(err)
		}
	}
}

// enforcing are the flags of a kubegcd that writes to the cluster, alone
// (no leader election), collecting owner references only.
var enforcing = []string{"--dry-run=false", "--leader-elect=false", "--controllers=ownergc"}

// daemons start kubegcd and wait until it is ready; each test gives the
// kubeconfig it reaches the cluster through.
var daemons = e2eutil.DaemonOptions{ReadyTimeout: time.Minute}

// readyz returns /readyz's status code and body.
func readyz(t *testing.T, d *e2eutil.Daemon) (int, string) {
	t.Helper()
	code, body, err := d.Get("/readyz")
	if err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	return code, string(body)
}

type statusJSON struct {
	Synced    bool `json:"synced"`
	Leader    bool `json:"leader"`
	Resources []struct {
		Group    string `json:"group"`
		Resource string `json:"resource"`
		Synced   bool   `json:"synced"`
	} `json:"resources"`
	DiscoveryFailures map[string]string `json:"discoveryFailures"`
}

func status(t *testing.T, d *e2eutil.Daemon) statusJSON {
	t.Helper()
	var s statusJSON
	d.GetJSON(t, "/status", http.StatusOK, &s)
	return s
}

// noDecisionUntilSynced waits until kubegcd is synced again, failing the
// test if an audit row about namespace ns appears before: nothing may be
// decided while some resource's mirror is behind the cluster (here, where
// the API server refuses no resource, every unsynced one is behind).
func noDecisionUntilSynced(t *testing.T, d *e2eutil.Daemon, ns string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() error {
		rows := auditOf(t, d, ns)
		s := status(t, d)
		if s.Synced {
			return nil
		}
		if len(rows) > 0 {
			var waiting []string
			for _, r := range s.Resources {
				if !r.Synced {
					waiting = append(waiting, r.Resource)
				}
			}
			return e2eutil.StopError{Err: fmt.Errorf("a decision while %v were not synced: %+v", waiting, rows[0])}
		}
		return fmt.Errorf("not synced yet")
	})
}

// ref is an ownerReference to a ConfigMap.
func ref(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid}
}

func createCM(t *testing.T, ns, name string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func deleteCM(t *testing.T, ns, name string) {
	t.Helper()
	if err := kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// cmExists reports whether the ConfigMap with that name and UID exists.
func cmExists(t *testing.T, ns, name string, uid types.UID) bool {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm.UID == uid
}

// auditOf returns the audit rows about objects of namespace ns.
func auditOf(t *testing.T, d *e2eutil.Daemon, ns string) []db.AuditEntry {
	t.Helper()
	rows, _, err := d.DB(t).Decisions().ListAudit(context.Background(), db.AuditFilter{Namespace: ns, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
