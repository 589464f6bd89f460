package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// readsFixture names the objects the requests ask about.
type readsFixture struct {
	TreeRoot  string   `json:"treeRoot"`
	Objects   []string `json:"objects"` // a sample of UIDs for /objects/{uid}
	Names     []string `json:"names"`   // "namespace/name" of ConfigMaps, for /objects?kind=
	Kinds     []string `json:"kinds"`
	AuditRows int      `json:"auditRows"`
}

// fillReads fills the database at path and, with keep, saves its fixture
// beside it.
func fillReads(ctx context.Context, path string, objects, auditRows, treeSize int, keep string) (*readsFixture, error) {
	store, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	start := time.Now()
	fx, err := fillMirror(ctx, store, objects, treeSize)
	if err != nil {
		return nil, err
	}
	fmt.Printf("  mirror written in %s (%.0f objects/s)\n",
		time.Since(start).Round(time.Second), float64(objects)/time.Since(start).Seconds())
	start = time.Now()
	if err := fillAudit(ctx, store, auditRows, fx); err != nil {
		return nil, err
	}
	fx.AuditRows = auditRows
	fmt.Printf("  audit written in %s\n", time.Since(start).Round(time.Second))
	if keep == "" {
		return fx, nil
	}
	b, err := json.Marshal(fx)
	if err != nil {
		return nil, err
	}
	return fx, os.WriteFile(keep+".json", b, 0o600)
}

// loadFixture returns the fixture kept beside a kept database, or nil when
// there is none to reuse.
func loadFixture(path, keep string) (*readsFixture, error) {
	if keep == "" {
		return nil, nil
	}
	b, err := os.ReadFile(keep + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(path); err == nil {
			return nil, fmt.Errorf("%s exists without its fixture %s.json: remove it to fill it afresh", path, keep)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var fx readsFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		return nil, fmt.Errorf("%s.json: %w", keep, err)
	}
	return &fx, nil
}

// readsNamespaces is the number of namespaces in the reads benchmark's
// mirror.
const readsNamespaces = 1000

// fillMirror writes objects through ingestion's list path:
//   - namespaces of Zipf-distributed sizes;
//   - Deployments that own ReplicaSets that own Pods;
//   - chains of ConfigMaps and Secrets, up to 6 deep, owned by ConfigMaps;
//   - one tree of treeSize ConfigMaps;
//   - stuckObjects pods being deleted, held by a finalizer.
//
// 5 % of the owned objects dangle: their owner's UID matches nothing.
func fillMirror(ctx context.Context, store *db.DB, objects, treeSize int) (*readsFixture, error) {
	f, err := newMirrorFiller(ctx, store)
	if err != nil {
		return nil, err
	}
	nsNames, err := f.namespaces(ctx)
	if err != nil {
		return nil, err
	}
	zipf := rand.NewZipf(f.r, 1.2, 1, readsNamespaces-1)
	made, err := f.tree(ctx, treeSize)
	if err != nil {
		return nil, err
	}
	f.deleting = time.Now().Add(-time.Hour)
	for made < objects-readsNamespaces {
		ns := nsNames[zipf.Uint64()]
		var n int
		if f.r.IntN(10) < 5 {
			n, err = f.deployment(ctx, ns, made)
		} else {
			n, err = f.chain(ctx, ns, made)
		}
		if err != nil {
			return nil, err
		}
		made += n
	}
	if err := f.finish(ctx); err != nil {
		return nil, err
	}
	return f.fx, nil
}

// listedResource is one resource of the mirror, filled as a list that
// began at epoch, with the page of objects not yet written.
type listedResource struct {
	db.Resource
	id    int64
	epoch int64
	page  []*db.Object
}

// mirrorFiller makes the mirror's objects from one random source, so that
// each run makes the same ones, and writes them page by page.
type mirrorFiller struct {
	store                              *db.DB
	r                                  *rand.Rand
	fx                                 *readsFixture
	nss, deps, rss, pods, cms, secrets *listedResource
	// uid counts the objects made, for their UIDs and resourceVersions.
	uid      int
	created  time.Time
	deleting time.Time // of the stuck pods
	stuck    int       // stuck pods made
}

// newMirrorFiller registers the resources and begins a list of each.
func newMirrorFiller(ctx context.Context, store *db.DB) (*mirrorFiller, error) {
	f := &mirrorFiller{store: store, r: rand.New(rand.NewPCG(1, 1)), fx: &readsFixture{}}
	mk := func(group, version, resource, kind string, namespaced bool) *listedResource {
		return &listedResource{Resource: db.Resource{Group: group, Version: version, Resource: resource, Kind: kind,
			Namespaced: namespaced}}
	}
	f.nss, f.deps = mk("", "v1", "namespaces", "Namespace", false), mk("apps", "v1", "deployments", "Deployment", true)
	f.rss, f.pods = mk("apps", "v1", "replicasets", "ReplicaSet", true), mk("", "v1", "pods", "Pod", true)
	f.cms, f.secrets = mk("", "v1", "configmaps", "ConfigMap", true), mk("", "v1", "secrets", "Secret", true)
	for _, rs := range f.all() {
		var err error
		if rs.id, err = store.Mirror().EnsureResource(ctx, rs.Resource); err != nil {
			return nil, err
		}
		if rs.epoch, err = store.Mirror().BeginList(ctx, rs.id); err != nil {
			return nil, err
		}
	}
	f.created = time.Now().Add(-48 * time.Hour)
	return f, nil
}

func (f *mirrorFiller) all() []*listedResource {
	return []*listedResource{f.nss, f.deps, f.rss, f.pods, f.cms, f.secrets}
}

// add queues o in its resource's page and writes the page when it holds
// 500 objects.
func (f *mirrorFiller) add(ctx context.Context, rs *listedResource, o *db.Object) error {
	if rs.page = append(rs.page, o); len(rs.page) == 500 {
		if err := f.store.Mirror().WriteListPage(ctx, rs.id, rs.epoch, rs.page); err != nil {
			return err
		}
		rs.page = rs.page[:0]
	}
	return nil
}

// obj makes an object of rs, owned by owner if it is not nil. One owner
// reference in 20 dangles.
func (f *mirrorFiller) obj(rs *listedResource, ns, name string, owner *db.Object) *db.Object {
	f.uid++
	apiVersion := rs.Version
	if rs.Group != "" {
		apiVersion = rs.Group + "/" + rs.Version
	}
	o := &db.Object{UID: fmt.Sprintf("%08x-0000-4000-8000-%012x", f.r.Uint32(), f.uid), APIVersion: apiVersion,
		Kind: rs.Kind, Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(f.uid), CreationTimestamp: &f.created}
	if owner != nil {
		yes := true
		ref := api.OwnerRef{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID,
			Controller: &yes, BlockOwnerDeletion: &yes}
		if f.r.IntN(20) == 0 {
			ref.UID = fmt.Sprintf("gone-%d", f.uid) // dangling
		}
		o.OwnerReferences = []api.OwnerRef{ref}
	}
	return o
}

// sample adds one object in a thousand to the fixture's UIDs.
func (f *mirrorFiller) sample(o *db.Object) {
	if f.r.IntN(1000) == 0 {
		f.fx.Objects = append(f.fx.Objects, o.UID)
	}
}

// namespaces makes the namespaces and returns their names.
func (f *mirrorFiller) namespaces(ctx context.Context) ([]string, error) {
	names := make([]string, readsNamespaces)
	for i := range names {
		names[i] = fmt.Sprintf("team-%04d", i)
		if err := f.add(ctx, f.nss, f.obj(f.nss, "", names[i], nil)); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// tree makes the tree of about treeSize ConfigMaps: one root owning
// ConfigMaps that own 100 each. It returns the number it made.
func (f *mirrorFiller) tree(ctx context.Context, treeSize int) (int, error) {
	root := f.obj(f.cms, "tree", "root", nil)
	f.fx.TreeRoot = root.UID
	if err := f.add(ctx, f.cms, root); err != nil {
		return 0, err
	}
	made := 1
	for i := 0; made < treeSize; i++ {
		mid := f.obj(f.cms, "tree", fmt.Sprint("mid-", i), root)
		mid.OwnerReferences[0].UID = root.UID
		if err := f.add(ctx, f.cms, mid); err != nil {
			return 0, err
		}
		made++
		for j := 0; j < 100 && made < treeSize; j++ {
			leaf := f.obj(f.cms, "tree", fmt.Sprintf("leaf-%d-%d", i, j), mid)
			leaf.OwnerReferences[0].UID = mid.UID
			if err := f.add(ctx, f.cms, leaf); err != nil {
				return 0, err
			}
			made++
		}
	}
	return made, nil
}

// deployment makes a Deployment in ns, its ReplicaSet and 1–8 pods. One
// pod in 50 is stuck in its deletion until there are stuckObjects. It
// returns the number of objects it made.
func (f *mirrorFiller) deployment(ctx context.Context, ns string, made int) (int, error) {
	d := f.obj(f.deps, ns, fmt.Sprint("web-", made), nil)
	rs := f.obj(f.rss, ns, d.Name+"-5d4f", d)
	if err := f.add(ctx, f.deps, d); err != nil {
		return 0, err
	}
	if err := f.add(ctx, f.rss, rs); err != nil {
		return 0, err
	}
	n := 2
	for p := range 1 + f.r.IntN(8) {
		pod := f.obj(f.pods, ns, fmt.Sprintf("%s-%d", rs.Name, p), rs)
		if f.stuck < stuckObjects && f.r.IntN(50) == 0 {
			pod.DeletionTimestamp, pod.Finalizers = &f.deleting, []string{"example.com/hold"}
			f.stuck++
		}
		pod.Pod = &db.Pod{Phase: "Running", NodeName: fmt.Sprint("node-", f.r.IntN(2000))}
		f.sample(pod)
		if err := f.add(ctx, f.pods, pod); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// chain makes a chain of 1–6 ConfigMaps and Secrets in ns, each owned by
// the one before. It returns the number of objects it made.
func (f *mirrorFiller) chain(ctx context.Context, ns string, made int) (int, error) {
	var owner *db.Object
	depths := 1 + f.r.IntN(6)
	for depth := range depths {
		rs := f.cms
		if f.r.IntN(3) == 0 {
			rs = f.secrets
		}
		o := f.obj(rs, ns, fmt.Sprintf("cfg-%d-%d", made+depth, depth), owner)
		f.sample(o)
		if rs == f.cms && f.r.IntN(20) == 0 {
			f.fx.Names = append(f.fx.Names, ns+"/"+o.Name)
		}
		if err := f.add(ctx, rs, o); err != nil {
			return 0, err
		}
		owner = o
	}
	return depths, nil
}

// finish writes the last page of each resource, ends its list and names
// the kinds in the fixture.
func (f *mirrorFiller) finish(ctx context.Context) error {
	for _, rs := range f.all() {
		if len(rs.page) > 0 {
			if err := f.store.Mirror().WriteListPage(ctx, rs.id, rs.epoch, rs.page); err != nil {
				return err
			}
		}
		if _, err := f.store.Mirror().FinishList(ctx, rs.id, rs.epoch, "1"); err != nil {
			return err
		}
	}
	for _, rs := range f.all() {
		f.fx.Kinds = append(f.fx.Kinds, rs.Kind)
	}
	return nil
}

// fillAudit writes rows through the ledger's batch insert: 30 days of
// decisions of the four controllers, most applied, some failed, and 10,000
// pending decisions.
func fillAudit(ctx context.Context, store *db.DB, rows int, fx *readsFixture) error {
	r := rand.New(rand.NewPCG(2, 2))
	controllers := []api.Controller{api.ControllerOwnerGC, api.ControllerPodGC, api.ControllerTTL, api.ControllerSVGC}
	outcomes := []api.Outcome{api.OutcomeApplied, api.OutcomeApplied, api.OutcomeApplied, api.OutcomeApplied, api.OutcomeDryRun,
		api.OutcomeNotFound, api.OutcomeFailed, api.OutcomeConflict}
	start := time.Now().Add(-30 * 24 * time.Hour)
	step := 30 * 24 * time.Hour / time.Duration(max(rows, 1))
	var batch []*db.AuditEntry
	for i := range rows {
		target := api.Target{APIVersion: "v1", Kind: fx.Kinds[r.IntN(len(fx.Kinds))],
			Namespace: fmt.Sprintf("team-%04d", r.IntN(1000)), Name: fmt.Sprint("obj-", i), UID: fmt.Sprintf("audit-%d", i)}
		if r.IntN(100) == 0 && len(fx.Objects) > 0 {
			target.UID = fx.Objects[r.IntN(len(fx.Objects))]
		}
		batch = append(batch, &db.AuditEntry{Time: start.Add(time.Duration(i) * step), Instance: "bench",
			Controller: controllers[r.IntN(len(controllers))], Rule: fmt.Sprintf("BR-21-%02d", 1+r.IntN(8)), Action: "delete",
			Target: target, Reason: "its owner is gone", Outcome: outcomes[r.IntN(len(outcomes))]})
		if len(batch) == 1000 {
			if err := store.Ledger().InsertAudits(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if err := store.Ledger().InsertAudits(ctx, batch); err != nil {
			return err
		}
	}
	for i := range 10_000 {
		if _, err := store.Ledger().UpsertPending(ctx, &db.Pending{Controller: "ownergc", Rule: "BR-21-03", Action: "delete",
			Reason: "its owner is gone", Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-0001",
				Name: fmt.Sprint("p-", i), UID: fmt.Sprint("pending-", i)}}); err != nil {
			return err
		}
	}
	return nil
}
