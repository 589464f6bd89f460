package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// daemon is a kubegcd running in-process; see e2eutil.
type daemon = e2eutil.Daemon

func freeAddr(t *testing.T) string { return e2eutil.FreeAddr(t) }

// mustEnforceAlone fails a test that starts an enforcing kubegcd while
// others run beside it. kubegcd collects the whole cluster: enforcing, it
// deletes the garbage the dry-run tests running in parallel set up to be
// found, and they fail at random. t.Setenv refuses a test that called
// t.Parallel (it panics, naming the test), which is what is wanted here.
// svgc alone may enforce beside others: it only trims the StorageVersions
// of API servers without an identity Lease, which no test makes in
// parallel.
func mustEnforceAlone(t *testing.T, args []string) {
	t.Helper()
	enforcing, svgcOnly := false, false
	for _, a := range args {
		switch a {
		case "--dry-run=false":
			enforcing = true
		case "--controllers=svgc":
			svgcOnly = true
		}
	}
	if enforcing && !svgcOnly {
		t.Setenv("KUBEGCD_E2E_ENFORCING", t.Name())
	}
}

// stopError ends eventually at once.
type stopError = e2eutil.StopError

// eventually polls fn until it returns nil, failing the test at the deadline.
func eventually(t *testing.T, timeout time.Duration, fn func() error) time.Duration {
	t.Helper()
	return e2eutil.Eventually(t, timeout, fn)
}

func tail(s string, n int) string { return e2eutil.Tail(s, n) }

// terminate sends the kubegcd binary cmd runs SIGTERM and requires it to
// exit with 0 within 30 s; exited carries what cmd.Wait returned.
func terminate(t *testing.T, cmd *exec.Cmd, exited <-chan error) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("kubegcd exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("kubegcd did not stop within 30s of SIGTERM")
	}
}

var widgetGVR = schema.GroupVersionResource{Group: "e2e.kubegcd.io", Version: "v1", Resource: "widgets"}

// installWidgetCRD creates a namespaced custom resource for the tests that
// need one from the start.
func installWidgetCRD(ctx context.Context) error {
	return createCRD(ctx, "e2e.kubegcd.io", "widgets", "Widget", "Namespaced")
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func createCRD(ctx context.Context, group, plural, kind, scope string) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group,
			"scope": scope,
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Wait until the API serves it.
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s.%s not served: %w", plural, group, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
