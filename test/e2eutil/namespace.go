package e2eutil

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
)

// NamespaceOptions say how New makes the namespaces of a suite's tests.
type NamespaceOptions struct {
	// Kube creates them.
	Kube kubernetes.Interface
	// RandomSuffix appends "-" and five random characters to each name,
	// so that every run gets namespaces of its own.
	RandomSuffix bool
	// RemovePods force-deletes a namespace's pods when its test ends, so
	// that none is left for the next test's controllers.
	RemovePods bool
	// AuditLog, when set, is the API server's JSON audit log: a test that
	// fails logs the deletions it recorded in its namespaces.
	AuditLog string
}

// New creates a namespace with the default ServiceAccount that pods need
// (no controller-manager creates it in a test cluster), and returns its
// name.
func (o NamespaceOptions) New(t *testing.T, name string) string {
	t.Helper()
	if o.RandomSuffix {
		name += "-" + rand.String(5)
	}
	ctx := context.Background()
	if _, err := o.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := o.Kube.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if o.RemovePods {
		t.Cleanup(func() { RemovePods(t, o.Kube, name) })
	}
	if o.AuditLog != "" {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("deletions in namespace %s, as the API server logged them:\n%s", name, DeletionsIn(o.AuditLog, name))
			}
		})
	}
	return name
}

// RemovePods force-deletes every pod of a namespace, finalizers and all.
func RemovePods(t *testing.T, kube kubernetes.Interface, ns string) {
	ctx := context.Background()
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("cleanup: listing pods of %s: %v", ns, err)
		return
	}
	zero := int64(0)
	for _, p := range pods.Items {
		if len(p.Finalizers) > 0 {
			_, _ = kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
		_ = kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
}

// DeletionsIn lists the deletions the API server logged, in the JSON audit
// log at path, in namespace ns: when, what, by whom and with which client.
func DeletionsIn(path, ns string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct {
			Stage     string                    `json:"stage"`
			Verb      string                    `json:"verb"`
			User      struct{ Username string } `json:"user"`
			UserAgent string                    `json:"userAgent"`
			ObjectRef struct {
				Resource, Namespace, Name string
			} `json:"objectRef"`
			ResponseStatus struct{ Code int } `json:"responseStatus"`
			Time           string             `json:"stageTimestamp"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ObjectRef.Namespace != ns {
			continue
		}
		out = append(out, fmt.Sprintf("  %s %s %s/%s: %d, by %s (%s)", e.Time, e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name,
			e.ResponseStatus.Code, e.User.Username, e.UserAgent))
	}
	if err := sc.Err(); err != nil {
		out = append(out, err.Error())
	}
	if len(out) == 0 {
		return "  none"
	}
	return strings.Join(out, "\n")
}
