package ingest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/db"
)

// ObjectFromMeta returns what the mirror would keep of m. A controller
// reads an object live when its mirror copy is behind. With this function
// it decides on exactly the fields a watch event would have given it.
func ObjectFromMeta(m metav1.Object, apiVersion, kind string) *db.Object {
	return toObject(m, apiVersion, kind)
}
