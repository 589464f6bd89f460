package ingest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/db"
)

// ObjectFromMeta is what the mirror would keep of m: a controller that reads
// an object live (its mirror copy being behind) decides on exactly the
// fields a watch event would have given it.
func ObjectFromMeta(m metav1.Object, apiVersion, kind string) *db.Object {
	return toObject(m, apiVersion, kind)
}
