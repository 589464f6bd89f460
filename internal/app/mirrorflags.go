package app

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/refs"
)

func (f *runFlags) addMirrorFlags(fs *pflag.FlagSet) {
	cfg := &f.cfg
	cfg.mirrorLabels, cfg.mirrorAnnotations = ingest.KeyAllowList{}, ingest.KeyAllowList{}
	fs.Var(cfg.mirrorLabels, "mirror-labels",
		"labels the mirror keeps for the cleanup rules, by resource, in kube-state-metrics' syntax: "+
			"'configmaps=[app,team],*=[example.com/owner]' ('*' for every resource, '[*]' for every label); "+
			"repeatable. Always kept: "+strings.Join(db.KeptLabelKeys, ", "))
	fs.Var(cfg.mirrorAnnotations, "mirror-annotations",
		"annotations the mirror keeps for the cleanup rules, as --mirror-labels; "+
			"never a Secret's "+lastAppliedAnnotation+", which holds its data. Always kept: "+
			strings.Join(db.KeptAnnotationKeys, ", "))
	fs.Var(&cfg.referencePaths, "reference-path",
		"declares the references of a kind kubegcd does not know, as `KIND[.GROUP]:{JSONPATH}:KIND[.GROUP]`: "+
			"each value the JSONPath finds names an object of the last kind, by name or by {name, namespace}, "+
			"such as Gateway.gateway.networking.k8s.io:{.spec.listeners[*].tls.certificateRefs[*]}:Secret; "+
			"the first kind is then read in full; repeatable")
}

const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// referencePaths is --reference-path: each value parses when it is given,
// so that a bad one is a usage error naming the flag.
type referencePaths []refs.Path

func (p *referencePaths) Set(s string) error {
	path, err := refs.ParsePath(s)
	if err != nil {
		return err
	}
	if path.Group == "" && path.Kind == "Secret" {
		return errors.New("a Secret is never read in full: kubegcd reads no Secret data")
	}
	*p = append(*p, path)
	return nil
}

func (p *referencePaths) String() string {
	out := make([]string, len(*p))
	for i, path := range *p {
		out[i] = path.String()
	}
	return strings.Join(out, " ")
}

func (p *referencePaths) Type() string { return "PATH" }
