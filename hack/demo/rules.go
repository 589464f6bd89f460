package main

import (
	"os"
	"path/filepath"
)

// demoRules is the demo's rules file. The unused-* built-ins call an object
// unused once nothing has referenced it for a day (grace), and never for
// longer than kubegcd has watched: the demo has just started, so it sets
// no grace. Every other built-in matches its seed as shipped. ttl-expired
// is set to delete: the demo runs in dry-run, so it shows what it would
// delete, and deletes nothing.
const demoRules = `# The demo's overrides of the built-in rules: no grace, so the seeded
# unused objects show at once; ttl-expired deletes, which dry-run records
# as what it would do.
rules:
- id: ttl-expired
  action: delete
  occurrences: 1
  limits: {max_count: 5}
  notify_before: 10m
- id: unused-configmaps
  params: {grace: 0s}
- id: unused-secrets
  params: {grace: 0s}
- id: unused-pvcs
  params: {grace: 0s}
- id: unused-serviceaccounts
  params: {grace: 0s}
`

// writeDemoRules writes demoRules as demo.yaml in dir, which it makes, for
// kubegcd's --rules-dir.
func writeDemoRules(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "demo.yaml"), []byte(demoRules), 0o644)
}
