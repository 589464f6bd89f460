package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
)

// The tests of this file enforce the ownership GC, so they run alone (no
// t.Parallel), as the other enforcing tests do.

// restoreFixture is a namespace whose objects an enforcing kubegcd
// collects, keeping copies of what ownergc deletes.
type restoreFixture struct {
	t  *testing.T
	ns string
	d  *daemon
}

// owned creates an owner ConfigMap, and each dependent made by create
// owned by it; then deletes the owner and waits until kubegcd has deleted
// the dependents. It returns the dependents' UIDs, by name.
func (f *restoreFixture) collect(owner string, dependents map[string]func(ref metav1.OwnerReference) (types.UID, error)) map[string]types.UID {
	f.t.Helper()
	ctx := context.Background()
	cms := kube.CoreV1().ConfigMaps(f.ns)
	o, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: owner}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: o.UID}
	uids := map[string]types.UID{}
	for name, create := range dependents {
		uid, err := create(ref)
		if err != nil {
			f.t.Fatalf("creating %s: %v", name, err)
		}
		uids[name] = uid
	}
	if err := cms.Delete(ctx, owner, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
	eventually(f.t, 60*time.Second, func() error {
		var copies api.DeletedCopyList
		f.d.GetJSON(f.t, "/deleted-copies?namespace="+f.ns+"&limit=1000", http.StatusOK, &copies)
		kept := map[string]bool{}
		for _, c := range copies.Items {
			kept[c.Target.UID] = true
		}
		for name, uid := range uids {
			if !kept[string(uid)] {
				return fmt.Errorf("no copy of %s yet", name)
			}
		}
		return nil
	})
	return uids
}

// post sends body to path and returns the status and the answer.
func (f *restoreFixture) post(path, body string) (int, string) {
	f.t.Helper()
	resp, err := f.d.Client.Post(f.d.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *restoreFixture) restoreFails(code int, words []string, args ...string) {
	f.t.Helper()
	cliFails(f.t, code, words, append(args, "-n", f.ns, "--server", f.d.ClientURL())...)
}

func configMapWith(ns, name string) func(ref metav1.OwnerReference) (types.UID, error) {
	return func(ref metav1.OwnerReference) (types.UID, error) {
		cm, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web", "tier": "config"},
				Annotations: map[string]string{"example.com/note": "keep me"}, OwnerReferences: []metav1.OwnerReference{ref}},
			Data:       map[string]string{"config.yaml": "replicas: 3\n", "mode": "fast"},
			BinaryData: map[string][]byte{"blob": {0, 1, 2}},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return cm.UID, nil
	}
}

func secretWith(ns, name string) func(ref metav1.OwnerReference) (types.UID, error) {
	return func(ref metav1.OwnerReference) (types.UID, error) {
		s, err := kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ref}},
			Data:       map[string][]byte{"password": []byte("hunter2")},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return s.UID, nil
	}
}

// TestRestoreDeletedCopies: ownergc, named by --deleted-copies-for, keeps
// a copy of what it deletes; kubegcd restore re-creates it with its data,
// labels and annotations, without the reference to its gone owner, audits
// it and links the two UIDs; a restore is refused, saying why, when it was
// made already, when the name exists, when a Secret's data was not kept,
// and for bad copies.
func TestRestoreDeletedCopies(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "restore-copies")
	leaveNoGarbage(t, ns)
	t.Cleanup(func() {
		_ = kube.CoreV1().Secrets(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	const gadgetGroup = "restore.e2e.kubegcd.io"
	if err := createCRD(ctx, gadgetGroup, "gadgets", "Gadget", "Namespaced"); err != nil {
		t.Fatal(err)
	}
	d := daemons.Start(t, "", enforcing("--deleted-copies-for=ownergc", "--discovery-interval=2s")...)
	d.WaitReady(t, 60*time.Second)
	f := &restoreFixture{t: t, ns: ns, d: d}
	gadgets := schema.GroupVersionResource{Group: gadgetGroup, Version: "v1", Resource: "gadgets"}
	// Wait until kubegcd watches Gadgets, so that ownergc sees the one made.
	eventually(t, 30*time.Second, func() error {
		var st api.Status
		d.GetJSON(t, "/status", http.StatusOK, &st)
		for _, r := range st.Resources {
			if r.Group == gadgetGroup && r.Synced {
				return nil
			}
		}
		return fmt.Errorf("gadgets not watched yet")
	})

	uids := f.collect("owner", map[string]func(metav1.OwnerReference) (types.UID, error){
		"cfg":     configMapWith(ns, "cfg"),
		"corrupt": configMapWith(ns, "corrupt"),
		"creds":   secretWith(ns, "creds"),
		"gadget": func(ref metav1.OwnerReference) (types.UID, error) {
			g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gadgetGroup + "/v1", "kind": "Gadget",
				"metadata": map[string]any{"name": "gadget", "ownerReferences": []any{map[string]any{
					"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name, "uid": string(ref.UID)}}},
				"spec": map[string]any{"size": int64(3)}}}
			got, err := dyn.Resource(gadgets).Namespace(ns).Create(ctx, g, metav1.CreateOptions{})
			if err != nil {
				return "", err
			}
			return got.GetUID(), nil
		},
	})

	// The list: newest first, without bodies; a Secret's copy says its data
	// was dropped, and has none.
	var copies api.DeletedCopyList
	d.GetJSON(t, "/deleted-copies?namespace="+ns, http.StatusOK, &copies)
	for _, c := range copies.Items {
		if c.Controller != api.ControllerOwnerGC || c.Rule != "" || c.Size <= 0 {
			t.Errorf("copy %+v, want ownergc's, without a rule, with its size", c)
		}
		if (c.Target.Kind == "Secret") != c.SecretDataDropped {
			t.Errorf("copy of %s: secretDataDropped %v", c.Target, c.SecretDataDropped)
		}
	}
	// The metrics count them; the ownergc of this daemon may have kept
	// copies in other tests' namespaces too.
	var bytes int64
	for _, c := range copies.Items {
		bytes += c.Size
	}
	if n, b := scrape(t, d, "kubegcd_deleted_copies"), scrape(t, d, "kubegcd_deleted_copies_bytes"); len(copies.Items) == 0 ||
		n < float64(len(copies.Items)) || b < float64(bytes) {
		t.Errorf("metrics: %v copies of %v bytes, want at least the %d of %d bytes listed", n, b, len(copies.Items), bytes)
	}
	if got := scrape(t, d, "kubegcd_deleted_copies_max_bytes"); got != 1<<30 {
		t.Errorf("kubegcd_deleted_copies_max_bytes = %v, want the default 1 GiB", got)
	}
	var secretCopy api.DeletedCopyDetail
	d.GetJSON(t, "/deleted-copies/"+string(uids["creds"]), http.StatusOK, &secretCopy)
	if strings.Contains(string(secretCopy.Object), "aHVudGVyMg") || strings.Contains(string(secretCopy.Object), `"data"`) {
		t.Errorf("the Secret's copy holds its data: %s", secretCopy.Object)
	}

	// Restored with its data, labels and annotations, without the gone
	// owner, under a new UID.
	out := cliOK(t, d, []string{"ConfigMap " + ns + "/cfg restored as uid ", "(the deleted object's uid was " + string(uids["cfg"]) + ")",
		"ownerReference dropped: ConfigMap owner"}, "restore", "configmap/cfg", "-n", ns)
	restored, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("not restored (%s): %v", out, err)
	}
	if restored.UID == uids["cfg"] || len(restored.OwnerReferences) != 0 ||
		!reflect.DeepEqual(restored.Data, map[string]string{"config.yaml": "replicas: 3\n", "mode": "fast"}) ||
		!reflect.DeepEqual(restored.BinaryData, map[string][]byte{"blob": {0, 1, 2}}) ||
		restored.Labels["app"] != "web" || restored.Labels["tier"] != "config" ||
		restored.Annotations["example.com/note"] != "keep me" {
		t.Errorf("restored %+v", restored)
	}

	// Audited as the operator's, its target the new object.
	eventually(t, 10*time.Second, func() error {
		var audit api.AuditList
		d.GetJSON(t, "/audit?controller=operator&uid="+string(restored.UID), http.StatusOK, &audit)
		if len(audit.Items) != 1 {
			return fmt.Errorf("audit rows of the restore: %+v", audit.Items)
		}
		r := audit.Items[0]
		var facts map[string]any
		_ = json.Unmarshal(r.Facts, &facts)
		if r.Action != api.ActionRestore || r.Outcome != api.OutcomeApplied || r.Target.Name != "cfg" ||
			facts["deletedUID"] != string(uids["cfg"]) || facts["by"] == "" || facts["droppedOwnerReferences"] == nil {
			return stopError{Err: fmt.Errorf("restore row %+v, facts %v", r, facts)}
		}
		return nil
	})

	// The history links the two UIDs, and why says so.
	eventually(t, 30*time.Second, func() error {
		code, stdout, stderr := cliRun("why", "configmap/cfg", "-n", ns, "--server", d.ClientURL())
		if code != 0 || !strings.Contains(stdout, "Restored:\n  from uid "+string(uids["cfg"])+", deleted by ownergc") {
			return fmt.Errorf("why: exit %d, %s%s", code, stdout, stderr)
		}
		return nil
	})
	var hist api.ObjectHistory
	d.GetJSON(t, "/objects/"+string(uids["cfg"])+"/history", http.StatusOK, &hist)
	if hist.RestoredAs == nil || hist.RestoredAs.RestoredUID != string(restored.UID) {
		t.Errorf("history of the deleted uid: restoredAs %+v, want %s", hist.RestoredAs, restored.UID)
	}

	// Made once.
	f.restoreFails(1, []string{"restore refused", "was already restored as uid " + string(restored.UID)},
		"restore", "configmap/cfg")

	// A Secret whose data was not kept is not restored empty unless asked.
	f.restoreFails(1, []string{"holds no data", "--allow-empty-secret"}, "restore", "secret/creds")
	// Over an object of its name: refused, naming it.
	other, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.restoreFails(1, []string{"Secret " + ns + "/creds exists (uid " + string(other.UID) + ")"},
		"restore", "secret/creds", "--allow-empty-secret")
	if err := kube.CoreV1().Secrets(ns).Delete(ctx, "creds", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cliOK(t, d, []string{"the Secret has no data"}, "restore", "secret/creds", "-n", ns, "--allow-empty-secret")
	if s, err := kube.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{}); err != nil || len(s.Data) != 0 {
		t.Errorf("restored Secret %+v, %v: want it without data", s, err)
	}

	// Bad copies and bad requests: clear errors.
	code, body := f.post("/objects/no-such-uid/restore", "{}")
	if code != http.StatusNotFound || !strings.Contains(body, `no copy of a deleted object with uid \"no-such-uid\"`) {
		t.Errorf("unknown uid: %d %s", code, body)
	}
	f.restoreFails(1, []string{`no copy of configmap "nothing" is kept in namespace ` + ns}, "restore", "configmap/nothing")
	conn, err := sql.Open("sqlite", "file:"+d.DBPath+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(`UPDATE deleted_copies SET body = x'1f8b0800' WHERE uid = ?`, string(uids["corrupt"])); err != nil {
		t.Fatal(err)
	}
	f.restoreFails(1, []string{"restore refused: the copy of ConfigMap " + string(uids["corrupt"]) + " is corrupt"},
		"restore", "configmap/corrupt")
	if err := dyn.Resource(crdGVR).Delete(ctx, "gadgets."+gadgetGroup, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		_, err := dyn.Resource(gadgets).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("gadgets still served (%v)", err)
	})
	f.restoreFails(1, []string{"restore refused", "the API server no longer serves gadgets in " + gadgetGroup + "/v1"},
		"restore", "gadget/gadget")
}

// TestRestoreKeptSecret: with --keep-deleted-secrets, a Secret's copy
// holds its data, and its restore brings it back.
func TestRestoreKeptSecret(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "restore-secret")
	t.Cleanup(func() {
		_ = kube.CoreV1().Secrets(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	leaveNoGarbage(t, ns)
	d := daemons.Start(t, "", enforcing("--deleted-copies-for=ownergc", "--keep-deleted-secrets")...)
	d.WaitReady(t, 60*time.Second)
	f := &restoreFixture{t: t, ns: ns, d: d}
	uids := f.collect("owner", map[string]func(metav1.OwnerReference) (types.UID, error){"creds": secretWith(ns, "creds")})
	var c api.DeletedCopyDetail
	d.GetJSON(t, "/deleted-copies/"+string(uids["creds"]), http.StatusOK, &c)
	if c.Copy.SecretDataDropped || !strings.Contains(string(c.Object), "aHVudGVyMg==") {
		t.Errorf("copy %+v %s: want the Secret's data kept", c.Copy, c.Object)
	}
	cliOK(t, d, []string{"Secret " + ns + "/creds restored as uid "}, "restore", "secret/creds", "-n", ns)
	s, err := kube.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil || string(s.Data["password"]) != "hunter2" {
		t.Errorf("restored Secret %+v, %v: want its password", s, err)
	}
}

// TestDeletedCopiesBound: under --deleted-copies-max-bytes, each copy
// ownergc keeps drops the oldest, so that all stay within the bound while
// the collector deletes. A dependent whose copy alone is larger than the
// bound is not deleted, and GET /pending says why.
func TestDeletedCopiesBound(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "copies-bound")
	leaveNoGarbage(t, ns)
	const bound = 12000
	d := daemons.Start(t, "", enforcing("--deleted-copies-for=ownergc",
		fmt.Sprintf("--deleted-copies-max-bytes=%d", bound))...)
	d.WaitReady(t, 60*time.Second)
	cms := kube.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}
	// Random text compresses to about three quarters: a copy of a small
	// one takes some 2.3 KB, of the huge one some 22 KB.
	small := map[string]bool{}
	for i := range 8 {
		name := fmt.Sprintf("small-%d", i)
		createNoise(t, ns, name, 3000, ref)
		small[name] = true
	}
	huge := createNoise(t, ns, "huge", 30000, ref)
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		for name := range small {
			if configMapExists(t, ns, name) {
				return fmt.Errorf("%s is still there", name)
			}
		}
		return nil
	})
	var copies api.DeletedCopyList
	d.GetJSON(t, "/deleted-copies?namespace="+ns+"&limit=1000", http.StatusOK, &copies)
	var total int64
	for _, c := range copies.Items {
		total += c.Size
		if !small[c.Target.Name] {
			t.Errorf("a copy of %s", c.Target.Name)
		}
	}
	if n := len(copies.Items); n == 0 || n == len(small) || total > bound {
		t.Errorf("%d copies of %d deleted, %d bytes; want some dropped, and at most %d bytes", n, len(small), total, bound)
	}
	if b := d.Metric(t, "kubegcd_deleted_copies_bytes"); b != float64(total) {
		t.Errorf("kubegcd_deleted_copies_bytes %v, want %d", b, total)
	}
	eventually(t, 30*time.Second, func() error {
		var pending api.PendingList
		d.GetJSON(t, "/pending?namespace="+ns, http.StatusOK, &pending)
		for _, p := range pending.Items {
			if p.Target.UID == string(huge.UID) && strings.Contains(p.Reason, "larger than --deleted-copies-max-bytes") {
				return nil
			}
		}
		return fmt.Errorf("no pending decision about huge that says its copy is too large: %+v", pending.Items)
	})
	if live, err := cms.Get(ctx, "huge", metav1.GetOptions{}); err != nil || live.UID != huge.UID {
		t.Errorf("huge, whose copy cannot be kept, was deleted: %v", err)
	}
}

// createNoise creates the ConfigMap ns/name owned by ref, holding n random
// characters.
func createNoise(t *testing.T, ns, name string, n int, ref metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[rand.IntN(62)]
	}
	cm, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ref}},
		Data:       map[string]string{"noise": string(b)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}
