package main

import (
	"context"
	"fmt"
	"time"

	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// holdFinalizer keeps the foreground-deleting owner in place however the
// demo's kubegcd is run, so there is always a deletion to look at.
const holdFinalizer = "demo.kubegcd.io/hold"

// seeder creates the demo's objects and counts them.
type seeder struct {
	kube    kubernetes.Interface
	created int
}

// seed creates a few dozen objects forming a realistic ownership graph and
// returns how many it created:
//   - nodes node-a (Ready) and node-b (NotReady, out-of-service), each owning
//     its Lease in kube-node-lease, as kubelets do;
//   - demo-shop: Deployment → ReplicaSet → two pods, a completed pod, a pod
//     bound to a node that does not exist, and a ConfigMap owning two more;
//   - demo-chain: ConfigMap → Secret → ConfigMap;
//   - demo-garbage: dependents of an owner UID that never existed and of an
//     owner that was deleted (nothing else collects them here);
//   - demo-foreground: an owner deleted in the foreground, held by its
//     blocking dependents and a finalizer;
//   - demo-batch: pods for every PodGC pass — finished ones beyond the
//     demo's threshold (one Evicted), one terminating on the out-of-service
//     node, one terminating that was never scheduled (held by a finalizer);
//     with cache-0 in demo-shop, bound to a node that is gone, and two nodes
//     without a TTL annotation, each controller has something to show;
//   - a second, fake kube-apiserver identity that is gone (its Lease deleted)
//     but still named in two StorageVersions, for svgc;
//   - demo-cleanup and demo-preview: a match for each built-in cleanup rule
//     (see cleanup).
func seed(ctx context.Context, cfg *rest.Config) (int, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	s := &seeder{kube: kube}
	steps := []func(context.Context) error{s.nodes, s.shop, s.chain, s.garbage, s.foreground, s.batch, s.storageVersions,
		s.cleanup}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return s.created, err
		}
	}
	return s.created, nil
}

// nodes creates node-a, Ready, and node-b, NotReady and out of service,
// each with its Lease.
func (s *seeder) nodes(ctx context.Context) error {
	now := metav1.Now()
	for _, n := range []struct {
		name  string
		ready corev1.ConditionStatus
		taint bool
	}{
		{"node-a", corev1.ConditionTrue, false},
		{"node-b", corev1.ConditionFalse, true},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   n.name,
			Labels: map[string]string{"kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux"},
		}}
		if n.taint {
			node.Spec.Taints = []corev1.Taint{{
				Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute,
			}}
		}
		node, err := s.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		s.created++
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: n.ready, LastHeartbeatTime: now, LastTransitionTime: now,
			Reason: "DemoNode", Message: "seeded by hack/demo",
		}}
		if _, err := s.kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: n.name, Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{ownerRef("v1", "Node", node, false, false)},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       new(n.name),
				LeaseDurationSeconds: new(int32(40)),
				RenewTime:            &metav1.MicroTime{Time: now.Time},
			},
		}
		if _, err := s.kube.CoordinationV1().Leases(lease.Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			return err
		}
		s.created++
	}
	return nil
}

// shop creates demo-shop: a Deployment with its ReplicaSet and pods, a
// finished pod, a pod on a node that is gone, and a ConfigMap owning two.
func (s *seeder) shop(ctx context.Context) error {
	const ns = "demo-shop"
	if err := s.namespace(ctx, ns); err != nil {
		return err
	}

	appConfig, err := s.configMap(ctx, ns, "app-config", nil)
	if err != nil {
		return err
	}
	owners := []metav1.OwnerReference{ownerRef("v1", "ConfigMap", appConfig, false, false)}
	for _, name := range []string{"app-config-frontend", "app-config-backend"} {
		if _, err := s.configMap(ctx, ns, name, owners); err != nil {
			return err
		}
	}

	labels := map[string]string{"app": "web"}
	deploy, err := s.kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.created++

	// No controller-manager runs, so make what the deployment controller would.
	rsLabels := map[string]string{"app": "web", "pod-template-hash": "7c9d8b5f4"}
	rs, err := s.kube.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-7c9d8b5f4", Labels: rsLabels,
			OwnerReferences: []metav1.OwnerReference{ownerRef("apps/v1", "Deployment", deploy, true, true)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: rsLabels},
			Template: podTemplate(rsLabels),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.created++
	for name, node := range map[string]string{"web-7c9d8b5f4-x2k9p": "node-a", "web-7c9d8b5f4-q8m4z": "node-b"} {
		if _, err := s.pod(ctx, ns, name, node, rsLabels, ownerRef("apps/v1", "ReplicaSet", rs, true, true)); err != nil {
			return err
		}
	}

	// A finished job-like pod, and one bound to a node that is gone.
	report, err := s.pod(ctx, ns, "report-28765", "node-a", map[string]string{"app": "report"})
	if err != nil {
		return err
	}
	report.Status.Phase = corev1.PodSucceeded
	if _, err := s.kube.CoreV1().Pods(ns).UpdateStatus(ctx, report, metav1.UpdateOptions{}); err != nil {
		return err
	}
	_, err = s.pod(ctx, ns, "cache-0", "node-gone", map[string]string{"app": "cache"})
	return err
}

// demoTerminatedThreshold is the demo's --terminated-pod-gc-threshold:
// batch creates more finished pods than that.
const demoTerminatedThreshold = 3

// batch creates demo-batch: finished pods beyond the threshold, and two
// pods being deleted that stay Terminating.
func (s *seeder) batch(ctx context.Context) error {
	const ns = "demo-batch"
	if err := s.namespace(ctx, ns); err != nil {
		return err
	}
	labels := map[string]string{"app": "nightly"}
	for i, status := range []corev1.PodStatus{
		{Phase: corev1.PodSucceeded},
		{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."},
		{Phase: corev1.PodSucceeded}, {Phase: corev1.PodFailed}, {Phase: corev1.PodSucceeded},
	} {
		p, err := s.pod(ctx, ns, fmt.Sprintf("nightly-%d", 28760+i), "node-a", labels)
		if err != nil {
			return err
		}
		p.Status = status
		if _, err := s.kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	// A pod bound to a node stays Terminating until a kubelet confirms, and
	// no kubelet runs here. An unscheduled pod goes at once, unless a
	// finalizer holds it.
	if _, err := s.pod(ctx, ns, "ingest-0", "node-b", labels); err != nil {
		return err
	}
	unbound, err := s.pod(ctx, ns, "ingest-unscheduled", "", labels)
	if err != nil {
		return err
	}
	unbound.Finalizers = []string{holdFinalizer}
	if _, err := s.kube.CoreV1().Pods(ns).Update(ctx, unbound, metav1.UpdateOptions{}); err != nil {
		return err
	}
	for _, name := range []string{"ingest-0", "ingest-unscheduled"} {
		if err := s.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// storageVersions records StorageVersion entries of a fake kube-apiserver
// identity, as a second kube-apiserver would. Then it removes that
// server's identity Lease, as happens when an API server goes away for
// good.
func (s *seeder) storageVersions(ctx context.Context) error {
	const fake = "kube-apiserver-demo-gone"
	now := metav1.NewMicroTime(time.Now())
	leases := s.kube.CoordinationV1().Leases(metav1.NamespaceSystem)
	if _, err := leases.Create(ctx, identityLease(fake, now), metav1.CreateOptions{}); err != nil {
		return err
	}
	svs := s.kube.InternalV1alpha1().StorageVersions()
	for name, versions := range map[string][]string{
		"demo.kubegcd.io.widgets": {"demo.kubegcd.io/v1"},
		"demo.kubegcd.io.gizmos":  {"demo.kubegcd.io/v1", "demo.kubegcd.io/v2"},
	} {
		sv, err := svs.Create(ctx, &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: name}},
			metav1.CreateOptions{})
		if err != nil {
			return err
		}
		s.created++
		entries := []apiserverinternalv1alpha1.ServerStorageVersion{{APIServerID: fake, EncodingVersion: versions[0],
			DecodableVersions: []string{versions[0]}, ServedVersions: []string{versions[0]}}}
		if len(versions) > 1 {
			// A second fake server whose lease is alive: it keeps its entry.
			entries = append(entries, apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: "kube-apiserver-demo-live",
				EncodingVersion: versions[1], DecodableVersions: versions, ServedVersions: versions})
		} else {
			sv.Status.CommonEncodingVersion = &versions[0]
		}
		sv.Status.StorageVersions = entries
		if _, err := svs.UpdateStatus(ctx, sv, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if _, err := leases.Create(ctx, identityLease("kube-apiserver-demo-live", now), metav1.CreateOptions{}); err != nil {
		return err
	}
	s.created++
	return leases.Delete(ctx, fake, metav1.DeleteOptions{})
}

// identityLease is the identity Lease of kube-apiserver id, renewed at now.
func identityLease(id string, now metav1.MicroTime) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: id,
			Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: new(id), LeaseDurationSeconds: new(int32(3600)), RenewTime: &now},
	}
}

// chain creates demo-chain: a ConfigMap owning a Secret owning a
// ConfigMap.
func (s *seeder) chain(ctx context.Context) error {
	const ns = "demo-chain"
	if err := s.namespace(ctx, ns); err != nil {
		return err
	}
	root, err := s.configMap(ctx, ns, "root", nil)
	if err != nil {
		return err
	}
	middle, err := s.kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "middle",
			OwnerReferences: []metav1.OwnerReference{ownerRef("v1", "ConfigMap", root, false, true)},
		},
		StringData: map[string]string{"token": "not-a-secret"},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.created++
	_, err = s.configMap(ctx, ns, "leaf", []metav1.OwnerReference{ownerRef("v1", "Secret", middle, false, true)})
	return err
}

// garbage creates demo-garbage: dependents of an owner that never existed
// and of an owner it deletes, one of them with a live owner too.
func (s *seeder) garbage(ctx context.Context) error {
	const ns = "demo-garbage"
	if err := s.namespace(ctx, ns); err != nil {
		return err
	}
	ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: uuid.NewUUID()}
	if _, err := s.configMap(ctx, ns, "child-of-ghost", []metav1.OwnerReference{ghost}); err != nil {
		return err
	}

	parent, err := s.configMap(ctx, ns, "parent", nil)
	if err != nil {
		return err
	}
	ref := ownerRef("v1", "ConfigMap", parent, false, false)
	if _, err := s.configMap(ctx, ns, "child-of-deleted", []metav1.OwnerReference{ref}); err != nil {
		return err
	}
	if _, err := s.kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-of-deleted", OwnerReferences: []metav1.OwnerReference{ref}},
		StringData: map[string]string{"password": "hunter2"},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	s.created++
	// With no garbage collector running, its dependents stay behind.
	if err := s.kube.CoreV1().ConfigMaps(ns).Delete(ctx, parent.Name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	s.created--

	// One dependent keeps a live owner too, so it must not be deleted.
	keeper, err := s.configMap(ctx, ns, "keeper", nil)
	if err != nil {
		return err
	}
	_, err = s.configMap(ctx, ns, "child-of-two",
		[]metav1.OwnerReference{ref, ownerRef("v1", "ConfigMap", keeper, false, false)})
	return err
}

// foreground creates demo-foreground: an owner deleted in the foreground,
// held by its blocking dependents and a finalizer.
func (s *seeder) foreground(ctx context.Context) error {
	const ns = "demo-foreground"
	if err := s.namespace(ctx, ns); err != nil {
		return err
	}
	owner, err := s.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "held-owner", Finalizers: []string{holdFinalizer}},
		Data:       map[string]string{"note": "deleted in the foreground; waits for its blocking dependents"},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.created++
	for i, block := range []bool{true, true, false} {
		name := fmt.Sprintf("held-dep-%d", i+1)
		owners := []metav1.OwnerReference{ownerRef("v1", "ConfigMap", owner, false, block)}
		if _, err := s.configMap(ctx, ns, name, owners); err != nil {
			return err
		}
	}
	// The API server sets deletionTimestamp and adds the foregroundDeletion
	// finalizer. The object stays until both finalizers are removed.
	return s.kube.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{
		PropagationPolicy: new(metav1.DeletePropagationForeground),
	})
}

// cleanup creates a match for each built-in cleanup rule. In demo-cleanup:
// a ConfigMap, a Secret, a claim and a ServiceAccount nothing refers to; a
// Job that finished two days ago without ttlSecondsAfterFinished; and a
// Deployment scaled to zero that names a ConfigMap that does not exist.
// Its other ConfigMap is used by that Deployment, with no Pod: kor would
// call it unused, kubegcd does not. demo-preview is a namespace whose
// kubegcd.io/expires has passed. None has an owner or is being deleted,
// so none is pending for a controller, stuck or a lint finding.
func (s *seeder) cleanup(ctx context.Context) error {
	const ns = "demo-cleanup"
	if err := s.namespace(ctx, ns); err != nil {
		return err
	}
	core := s.kube.CoreV1()
	opts := metav1.CreateOptions{}
	for _, name := range []string{"old-settings", "report-templates"} {
		if _, err := s.configMap(ctx, ns, name, nil); err != nil {
			return err
		}
	}
	if _, err := core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "old-api-token"},
		StringData: map[string]string{"token": "not-a-secret"}}, opts); err != nil {
		return err
	}
	if _, err := core.PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "scratch-data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}, opts); err != nil {
		return err
	}
	if _, err := core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: "retired-robot"}}, opts); err != nil {
		return err
	}
	s.created += 3

	if err := s.finishedJob(ctx, ns, "db-migrate-1", time.Now().Add(-48*time.Hour)); err != nil {
		return err
	}

	labels := map[string]string{"app": "reports"}
	tmpl := podTemplate(labels)
	for _, cm := range []string{"report-templates", "reports-config"} {
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: cm, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}})
	}
	if _, err := s.kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "reports", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: tmpl},
	}, opts); err != nil {
		return err
	}
	s.created++

	// Someone meant to delete it yesterday.
	yesterday := time.Now().UTC().Add(-24 * time.Hour).Format(time.DateOnly)
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo-preview",
		Annotations: map[string]string{"kubegcd.io/expires": yesterday}}}, opts); err != nil {
		return err
	}
	s.created++
	return nil
}

// finishedJob creates a Job and writes the status the Job controller
// would once it completed at finished.
func (s *seeder) finishedJob(ctx context.Context, ns, name string, finished time.Time) error {
	jobs := s.kube.BatchV1().Jobs(ns)
	tmpl := podTemplate(nil)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	job, err := jobs.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.created++
	at, start := metav1.NewTime(finished), metav1.NewTime(finished.Add(-time.Minute))
	job.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &at, Succeeded: 1}
	for _, t := range []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete} {
		job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue,
			Reason: "CompletionsReached", LastProbeTime: at, LastTransitionTime: at})
	}
	_, err = jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
	return err
}

// namespace creates a namespace and its default ServiceAccount, which
// nothing else creates here and which pods need.
func (s *seeder) namespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := s.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := s.kube.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return err
	}
	s.created += 2
	return nil
}

// configMap creates ConfigMap name in ns with owners.
func (s *seeder) configMap(ctx context.Context, ns, name string, owners []metav1.OwnerReference) (
	*corev1.ConfigMap, error) {
	cm, err := s.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
		Data:       map[string]string{"seeded-at": time.Now().UTC().Format(time.RFC3339)},
	}, metav1.CreateOptions{})
	if err == nil {
		s.created++
	}
	return cm, err
}

// pod creates pod name in ns, bound to node ("": not scheduled), with
// labels and owners.
func (s *seeder) pod(ctx context.Context, ns, name, node string, labels map[string]string,
	owners ...metav1.OwnerReference) (*corev1.Pod, error) {
	tmpl := podTemplate(labels)
	tmpl.Spec.NodeName = node
	pod, err := s.kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: owners},
		Spec:       tmpl.Spec,
	}, metav1.CreateOptions{})
	if err == nil {
		s.created++
	}
	return pod, err
}

// podTemplate is a template of one pause container with labels.
func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// ownerRef points at owner, an object of the given apiVersion and kind.
func ownerRef(apiVersion, kind string, owner metav1.Object, controller, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         apiVersion,
		Kind:               kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         new(controller),
		BlockOwnerDeletion: new(block),
	}
}
