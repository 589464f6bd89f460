package podgc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/db"
)

// markFailedAndDelete is upstream's markFailedAndDeletePodWithCondition: a
// pod not yet Succeeded or Failed is first patched to Failed through the
// status subresource (with the DisruptionTarget condition for orphaned
// pods); only if that works is it deleted, with grace period 0. Both writes
// carry the pod's UID as a precondition.
func (c *Controller) markFailedAndDelete(ctx context.Context, pod *db.Object, condition bool, now time.Time) error {
	pods := c.opts.Client.CoreV1().Pods(pod.Namespace)
	if pod.Pod.Phase != string(corev1.PodSucceeded) && pod.Pod.Phase != string(corev1.PodFailed) {
		patch, err := failedPatch(pod, condition, now)
		if err != nil {
			return err
		}
		_, err = pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{}, "status")
		if err != nil {
			return fmt.Errorf("marking the pod Failed before deleting it: %w", err)
		}
	}
	uid := types.UID(pod.UID)
	grace := int64(0)
	return pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace,
		Preconditions: &metav1.Preconditions{UID: &uid}})
}

// failedPatch is the strategic merge patch of the pod's status: phase
// Failed, observedGeneration (PodObservedGenerationTracking is GA), and for
// orphaned pods the DisruptionTarget condition, merged by type. The uid in
// metadata makes the patch fail on a pod re-created under the same name.
func failedPatch(pod *db.Object, condition bool, now time.Time) ([]byte, error) {
	status := map[string]any{"phase": corev1.PodFailed, "observedGeneration": pod.Pod.Generation}
	if condition {
		status["conditions"] = []map[string]any{{
			"type":               corev1.DisruptionTarget,
			"status":             corev1.ConditionTrue,
			"reason":             "DeletionByPodGC",
			"message":            "PodGC: node no longer exists",
			"observedGeneration": pod.Pod.Generation,
			"lastTransitionTime": metav1.NewTime(now),
		}}
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID}, "status": status})
}
