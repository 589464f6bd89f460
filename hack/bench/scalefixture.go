package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The fixture's shape: namespaces, and what each workload and object
// carries.
const (
	scaleNamespaces   = 50
	cascadeNS         = "scale-cascade"     // collected by kubegcd
	kcmCascadeNS      = "scale-cascade-kcm" // collected by kube-controller-manager
	podsPerDeployment = 25
	podsPerJob        = 5
	annotationBytes   = 1024
)

// widgets is the fixture's custom resource.
var widgets = schema.GroupVersionResource{Group: "bench.kubegcd.io", Version: "v1", Resource: "widgets"}

// scaleBuilder creates the scenario's objects.
type scaleBuilder struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	c    *creator
	sc   scaleConfig
	seq  atomic.Int64 // tells apart the names of each chains call's Deployments
}

// nodes creates the nodes.
func (b *scaleBuilder) nodes(ctx context.Context) error {
	start := time.Now()
	if err := b.c.parallel(ctx, seq(b.sc.nodes), b.createNode); err != nil {
		return err
	}
	fmt.Printf("  %d nodes created in %s\n", b.sc.nodes, time.Since(start).Round(time.Millisecond))
	return nil
}

// cascades creates the two cascades' Deployments, ReplicaSets and pods,
// one for each collector.
func (b *scaleBuilder) cascades(ctx context.Context) error {
	start := time.Now()
	per := (b.sc.cascadePods + b.sc.cascadeDeployments - 1) / b.sc.cascadeDeployments
	for _, ns := range []string{cascadeNS, kcmCascadeNS} {
		if err := b.chains(ctx, ns, b.sc.cascadePods, per); err != nil {
			return err
		}
	}
	printPodsCreated("of the cascades, with their Deployments and ReplicaSets,", b.sc.cascadesPods(), start)
	return nil
}

// workloads creates the other Deployments, ReplicaSets, Jobs and their
// pods, which kwok runs.
func (b *scaleBuilder) workloads(ctx context.Context) error {
	start := time.Now()
	rest := b.sc.runPods()
	jobs := rest / 4 / podsPerJob
	if err := b.chains(ctx, "scale", rest-jobs*podsPerJob, podsPerDeployment); err != nil {
		return err
	}
	if err := b.jobs(ctx, jobs); err != nil {
		return err
	}
	printPodsCreated("with their Deployments, ReplicaSets and Jobs", rest, start)
	return nil
}

// printPodsCreated prints how many pods were created since start, and at
// what rate.
func printPodsCreated(what string, pods int, start time.Time) {
	took := time.Since(start)
	fmt.Printf("  %d pods %s created in %s (%.0f pods/s)\n",
		pods, what, took.Round(time.Millisecond), float64(pods)/took.Seconds())
}

// scaleNamespace is the namespace of workload or object i.
func scaleNamespace(i int) string { return fmt.Sprintf("scale-%d", i%scaleNamespaces) }

// namespacesAndCRD creates the namespaces, each with its default
// ServiceAccount, and the Widget resource.
func (b *scaleBuilder) namespacesAndCRD(ctx context.Context) error {
	names := []string{cascadeNS, kcmCascadeNS}
	for i := range scaleNamespaces {
		names = append(names, scaleNamespace(i))
	}
	for _, n := range names {
		if err := createNamespace(ctx, b.kube, n); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if err := createDefaultServiceAccount(ctx, b.kube, n); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": widgets.Resource + "." + widgets.Group},
		"spec": map[string]any{
			"group": widgets.Group,
			"scope": "Namespaced",
			"names": map[string]any{
				"plural": widgets.Resource, "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
			},
			"versions": []any{map[string]any{
				"name": widgets.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	crds := schema.GroupVersionResource{
		Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions",
	}
	_, err := b.dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return pollUntil(ctx, time.Minute, func() (bool, error) {
		_, err := b.dyn.Resource(widgets).Namespace(cascadeNS).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}

func ptrTo[T any](v T) *T { return &v }

// meta is the realistic metadata of a workload or object. It has the
// labels tools put on everything and one 1 KB annotation, such as a
// last-applied configuration.
func meta(name, ns, app string, i int) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: ns,
		Labels: map[string]string{
			"app.kubernetes.io/name":       app,
			"app.kubernetes.io/instance":   fmt.Sprintf("%s-%d", app, i%50),
			"app.kubernetes.io/part-of":    "scale",
			"app.kubernetes.io/managed-by": "bench",
			"team":                         fmt.Sprintf("team-%d", i%7),
		},
		Annotations: map[string]string{"bench.kubegcd.io/config": bigAnnotation},
	}
}

var bigAnnotation = strings.Repeat("x", annotationBytes)

// createNode creates kwok node i, tainted so that only pods that tolerate
// kwok land on it.
func (b *scaleBuilder) createNode(ctx context.Context, i int) error {
	name := fmt.Sprintf("kwok-node-%04d", i)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
				"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3)},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
			Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule,
		}}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{}, Capacity: corev1.ResourceList{}},
	}
	nodes := b.kube.CoreV1().Nodes()
	_, err := createRetrying(ctx,
		func() (*corev1.Node, error) { return nodes.Create(ctx, node, metav1.CreateOptions{}) },
		func() (*corev1.Node, error) { return nodes.Get(ctx, name, metav1.GetOptions{}) })
	return err
}

// nodeName is the kwok node that pod i runs on.
func nodeName(i, nodes int) string { return fmt.Sprintf("kwok-node-%04d", i%nodes) }

// chains creates Deployments in ns, each owning a ReplicaSet that owns
// per pods, until there are pods pods. The references are the deployment
// controller's: each is a controller reference that blocks its owner's
// deletion. In the namespace "scale" the chains spread over the scale
// namespaces and their pods run on the kwok nodes.
func (b *scaleBuilder) chains(ctx context.Context, ns string, pods, per int) error {
	n := (pods + per - 1) / per
	gen := b.seq.Add(1)
	// The cascades' pods time the collectors, so they are not scheduled. A
	// pod that no node runs goes as soon as it is deleted. A running pod
	// waits for kwok, playing the kubelet, to end it: that round trip paced
	// both collectors at 74–93 pods/s and took 4 minutes of the run. kwok's
	// status patches for 20,000 more running pods also took minutes of the
	// build.
	scheduled := ns == "scale"
	return b.c.parallel(ctx, seq(n), func(ctx context.Context, i int) error {
		namespace := ns
		if scheduled {
			namespace = scaleNamespace(i)
		}
		rs, tmpl, ref, err := b.deploymentAndReplicaSet(ctx, namespace, fmt.Sprintf("web-%d-%d", gen, i), i, per)
		if err != nil {
			return err
		}
		for j := range min(per, pods-i*per) {
			node := ""
			if scheduled {
				node = nodeName(i*per+j, b.sc.nodes)
			}
			if err := b.createPod(ctx, namespace, fmt.Sprintf("%s-%05d", rs, j), tmpl, ref, node); err != nil {
				return err
			}
		}
		return nil
	})
}

// deploymentAndReplicaSet creates Deployment name with replicas pods, and
// the ReplicaSet it owns. It returns the ReplicaSet's name, its pod
// template and the controller reference its pods carry.
func (b *scaleBuilder) deploymentAndReplicaSet(ctx context.Context, ns, name string, i, replicas int) (
	rsName string, tmpl corev1.PodTemplateSpec, ref metav1.OwnerReference, err error) {
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{ObjectMeta: meta(name, ns, "web", i), Spec: appsv1.DeploymentSpec{
		Replicas: ptrTo(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: podTemplate(labels)}}
	deployments := b.kube.AppsV1().Deployments(ns)
	created, err := createRetrying(ctx,
		func() (*appsv1.Deployment, error) { return deployments.Create(ctx, dep, metav1.CreateOptions{}) },
		func() (*appsv1.Deployment, error) { return deployments.Get(ctx, name, metav1.GetOptions{}) })
	if err != nil {
		return "", tmpl, ref, err
	}
	rsName = name + "-7d4b9c8f6"
	rsLabels := map[string]string{"app": name, "pod-template-hash": "7d4b9c8f6"}
	tmpl = podTemplate(rsLabels)
	rs := &appsv1.ReplicaSet{ObjectMeta: meta(rsName, ns, "web", i), Spec: appsv1.ReplicaSetSpec{
		Replicas: ptrTo(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: rsLabels}, Template: tmpl}}
	rs.Labels = rsLabels
	rs.OwnerReferences = []metav1.OwnerReference{controllerRef("apps/v1", "Deployment", name, created.UID)}
	replicaSets := b.kube.AppsV1().ReplicaSets(ns)
	createdRS, err := createRetrying(ctx,
		func() (*appsv1.ReplicaSet, error) { return replicaSets.Create(ctx, rs, metav1.CreateOptions{}) },
		func() (*appsv1.ReplicaSet, error) { return replicaSets.Get(ctx, rsName, metav1.GetOptions{}) })
	if err != nil {
		return "", tmpl, ref, err
	}
	return rsName, tmpl, controllerRef("apps/v1", "ReplicaSet", rsName, createdRS.UID), nil
}

// jobs creates n Jobs of podsPerJob pods each; kwok completes the pods.
func (b *scaleBuilder) jobs(ctx context.Context, n int) error {
	return b.c.parallel(ctx, seq(n), func(ctx context.Context, i int) error {
		namespace, name := scaleNamespace(i), fmt.Sprintf("batch-%d", i)
		tmpl := podTemplate(map[string]string{"job": name})
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		job := &batchv1.Job{ObjectMeta: meta(name, namespace, "batch", i), Spec: batchv1.JobSpec{
			Completions: ptrTo(int32(podsPerJob)), Parallelism: ptrTo(int32(podsPerJob)), Template: tmpl}}
		jobs := b.kube.BatchV1().Jobs(namespace)
		created, err := createRetrying(ctx,
			func() (*batchv1.Job, error) { return jobs.Create(ctx, job, metav1.CreateOptions{}) },
			func() (*batchv1.Job, error) { return jobs.Get(ctx, name, metav1.GetOptions{}) })
		if err != nil {
			return err
		}
		// The API server filled in the selector's labels. The pods carry
		// them, as the job controller's pods would.
		podTmpl := created.Spec.Template
		ref := controllerRef("batch/v1", "Job", name, created.UID)
		for j := range podsPerJob {
			node := nodeName(i*podsPerJob+j, b.sc.nodes)
			if err := b.createPod(ctx, namespace, fmt.Sprintf("%s-%d", name, j), podTmpl, ref, node); err != nil {
				return err
			}
		}
		return nil
	})
}

// controllerRef is a controller reference that blocks its owner's
// deletion.
func controllerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid,
		Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}
}

// podTemplate is a template of one pause container with labels.
func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{}}}},
	}
}

// createPod creates a pod from tmpl, owned through ref. It binds the pod
// to the kwok node node, as the scheduler would, so that kwok runs it.
// With node "" the pod is not scheduled.
func (b *scaleBuilder) createPod(ctx context.Context, ns, name string, tmpl corev1.PodTemplateSpec,
	ref metav1.OwnerReference, node string) error {
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Name, pod.Namespace = name, ns
	pod.OwnerReferences = []metav1.OwnerReference{ref}
	pod.Spec.NodeName = node
	pod.Spec.Tolerations = []corev1.Toleration{{
		Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
	}}
	pods := b.kube.CoreV1().Pods(ns)
	_, err := createRetrying(ctx,
		func() (*corev1.Pod, error) { return pods.Create(ctx, pod, metav1.CreateOptions{}) },
		func() (*corev1.Pod, error) { return pods.Get(ctx, name, metav1.GetOptions{}) })
	return err
}

// otherObjects creates ConfigMaps (40 %), Secrets (30 %), headless
// Services (10 %) and Widgets (20 %), spread over the namespaces.
func (b *scaleBuilder) otherObjects(ctx context.Context) error {
	start := time.Now()
	n := b.sc.others
	cms, secrets, services := n*4/10, n*3/10, n/10
	err := b.c.parallel(ctx, seq(n), func(ctx context.Context, i int) error {
		ns := scaleNamespace(i)
		switch {
		case i < cms:
			return b.createConfigMap(ctx, ns, i)
		case i < cms+secrets:
			return b.createSecret(ctx, ns, i)
		case i < cms+secrets+services:
			return b.createService(ctx, ns, i)
		default:
			return b.createWidget(ctx, ns, i)
		}
	})
	if err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Printf("  %d ConfigMaps, Secrets, Services and Widgets created in %s (%.0f/s)\n",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds())
	return nil
}

func (b *scaleBuilder) createConfigMap(ctx context.Context, ns string, i int) error {
	cm := &corev1.ConfigMap{ObjectMeta: meta(fmt.Sprintf("config-%06d", i), ns, "config", i),
		Data: map[string]string{"key": "value"}}
	client := b.kube.CoreV1().ConfigMaps(ns)
	_, err := createRetrying(ctx,
		func() (*corev1.ConfigMap, error) { return client.Create(ctx, cm, metav1.CreateOptions{}) },
		func() (*corev1.ConfigMap, error) { return client.Get(ctx, cm.Name, metav1.GetOptions{}) })
	return err
}

func (b *scaleBuilder) createSecret(ctx context.Context, ns string, i int) error {
	s := &corev1.Secret{ObjectMeta: meta(fmt.Sprintf("secret-%06d", i), ns, "secret", i),
		StringData: map[string]string{"token": "s3cr3t"}}
	client := b.kube.CoreV1().Secrets(ns)
	_, err := createRetrying(ctx,
		func() (*corev1.Secret, error) { return client.Create(ctx, s, metav1.CreateOptions{}) },
		func() (*corev1.Secret, error) { return client.Get(ctx, s.Name, metav1.GetOptions{}) })
	return err
}

// createService creates a headless Service: the test cluster's service
// range has only 254 addresses.
func (b *scaleBuilder) createService(ctx context.Context, ns string, i int) error {
	svc := &corev1.Service{ObjectMeta: meta(fmt.Sprintf("svc-%06d", i), ns, "svc", i), Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "web"},
		Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	client := b.kube.CoreV1().Services(ns)
	_, err := createRetrying(ctx,
		func() (*corev1.Service, error) { return client.Create(ctx, svc, metav1.CreateOptions{}) },
		func() (*corev1.Service, error) { return client.Get(ctx, svc.Name, metav1.GetOptions{}) })
	return err
}

func (b *scaleBuilder) createWidget(ctx context.Context, ns string, i int) error {
	m := meta(fmt.Sprintf("widget-%06d", i), ns, "widget", i)
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bench.kubegcd.io/v1", "kind": "Widget",
		"spec": map[string]any{"size": int64(i % 10)}}}
	w.SetName(m.Name)
	w.SetNamespace(ns)
	w.SetLabels(m.Labels)
	w.SetAnnotations(m.Annotations)
	client := b.dyn.Resource(widgets).Namespace(ns)
	_, err := createRetrying(ctx,
		func() (*unstructured.Unstructured, error) { return client.Create(ctx, w, metav1.CreateOptions{}) },
		func() (*unstructured.Unstructured, error) { return client.Get(ctx, w.GetName(), metav1.GetOptions{}) })
	return err
}
