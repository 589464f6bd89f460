package e2elease

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// kubegcd's two identities, as deploy/clusterrole.yaml and
// deploy/flowschema.yaml name them.
const (
	kubegcdUser = "kubegcd"
	kubegcdSA   = "system:serviceaccount:kube-system:kubegcd"
)

// TestShippedFlowSchema applies deploy/flowschema.yaml and checks where API
// Priority and Fairness puts kubegcd's Lease calls. kube-apiserver names
// the FlowSchema and priority level it chose in the headers of each answer,
// refusals included: it classifies a request before it authorizes it. The
// requests impersonate kubegcd's two identities.
func TestShippedFlowSchema(t *testing.T) {
	ctx := context.Background()
	level, err := kube.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, "leader-election", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaderElection := string(level.UID)
	// Before: the ServiceAccount's Lease calls are in the leader-election
	// level already, the user's are not.
	for _, verb := range []string{http.MethodGet, http.MethodPut} {
		if _, pl := classify(t, kubegcdSA, verb, leasePath); pl != leaderElection {
			t.Errorf("%s of a Lease as %s: priority level %s, want leader-election (%s)", verb, kubegcdSA, pl, leaderElection)
		}
	}
	if _, pl := classify(t, kubegcdUser, http.MethodGet, leasePath); pl == leaderElection {
		t.Fatalf("GET of a Lease as %s is in the leader-election level without the FlowSchema", kubegcdUser)
	}

	fs := shippedFlowSchema(t)
	made, err := kube.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.FlowcontrolV1().FlowSchemas().Delete(context.Background(), fs.Name, metav1.DeleteOptions{})
	})
	// kube-apiserver applies a new FlowSchema in the background. The
	// ServiceAccount's get and update may match workload-leader-election
	// instead: either puts them in the same level.
	e2eutil.Eventually(t, 30*time.Second, func() error {
		for _, as := range []string{kubegcdUser, kubegcdSA} {
			for _, verb := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodPost} {
				path := leasePath
				if verb == http.MethodPost {
					path = leasesPath
				}
				if got, pl := classify(t, as, verb, path); pl != leaderElection ||
					(as == kubegcdUser && got != string(made.UID)) {
					return fmt.Errorf("%s %s as %s: FlowSchema %s, priority level %s; want %s in %s (%s)", verb, path,
						as, got, pl, made.UID, fs.Name, leaderElection)
				}
			}
		}
		return nil
	})
	// What is not a Lease call stays where it was.
	if got, pl := classify(t, kubegcdUser, http.MethodGet, "/api/v1/configmaps"); got == string(made.UID) ||
		pl == leaderElection {
		t.Errorf("a list of ConfigMaps as %s: FlowSchema %s, priority level %s", kubegcdUser, got, pl)
	}
}

const (
	leasesPath = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
	leasePath  = leasesPath + "/kubegcd"
)

// shippedFlowSchema reads deploy/flowschema.yaml, which holds one
// FlowSchema.
func shippedFlowSchema(t *testing.T) *flowcontrolv1.FlowSchema {
	t.Helper()
	data, err := os.ReadFile("../../deploy/flowschema.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("deploy/flowschema.yaml: %v", err)
	}
	fs, ok := obj.(*flowcontrolv1.FlowSchema)
	if !ok {
		t.Fatalf("deploy/flowschema.yaml holds a %T, want a FlowSchema", obj)
	}
	return fs
}

// classify sends a request as the user as and returns the UIDs of the
// FlowSchema and priority level kube-apiserver chose for it.
func classify(t *testing.T, as, method, path string) (flowSchema, priorityLevel string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: as}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var body []byte
	contentType := "application/json"
	switch method {
	case http.MethodPut, http.MethodPost:
		body = []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"kubegcd"}}`)
	case http.MethodPatch:
		body, contentType = []byte(`{}`), "application/merge-patch+json"
	}
	req, err := http.NewRequest(method, cfg.Host+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID),
		resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
}
