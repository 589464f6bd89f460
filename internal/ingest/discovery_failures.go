package ingest

import (
	"maps"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DiscoveryFailures returns the API group/versions whose discovery failed
// in the last discovery, each with its error. Their resources cannot be
// listed, as when an aggregated API is down or a CRD has no served
// version. Such a failure holds back every namespace being deleted.
func (i *Ingester) DiscoveryFailures() map[string]string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return maps.Clone(i.failedDiscovery)
}

func (i *Ingester) setDiscoveryFailures(failed map[schema.GroupVersion]error) {
	m := make(map[string]string, len(failed))
	for gv, err := range failed {
		m[gv.String()] = err.Error()
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.failedDiscovery = m
	// Under the lock, so that two discoveries cannot leave a mix.
	i.metrics.discoveryFailed.Reset()
	for gv := range m {
		i.metrics.discoveryFailed.WithLabelValues(gv).Set(1)
	}
}
