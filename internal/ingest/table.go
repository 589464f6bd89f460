package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/db"
)

// Secrets are listed and watched as the server-side Tables kubectl get
// reads: each row holds the Secret's metadata and the printed columns,
// Type among them. So kubegcd learns a Secret's type without its data
// ever leaving the API server, lists and watches alike (kubectl get -w
// asks the same).
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

var tableResources = map[schema.GroupResource]typedResource{
	{Group: "", Resource: "secrets"}: {
		source: func(i *Ingester, gvr schema.GroupVersionResource) source {
			return newTableSource(i.table, gvr.Resource, "Type")
		},
		extract: func(obj runtime.Object, o *db.Object) {
			if r, ok := obj.(*tableRow); ok && r.found {
				o.Secret = &db.Secret{Type: r.cell}
			}
		},
	},
}

// tableConfig is the client configuration of the core group's Tables.
func tableConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.APIPath = "/api"
	c.GroupVersion = &corev1.SchemeGroupVersion
	// Decodes the Status of a failed request, for apierrors.
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.AcceptContentTypes = tableAccept
	c.ContentType = runtime.ContentTypeJSON
	return c
}

// tableSource lists and watches one core resource as Tables, keeping one
// column of each row.
type tableSource struct {
	c        rest.Interface
	resource string
	column   string
	// at is the column's index, from the last Table that had column
	// definitions: in a watch only the first event has them. -1 while
	// unknown.
	at *atomic.Int32
}

func newTableSource(c rest.Interface, resource, column string) tableSource {
	s := tableSource{c: c, resource: resource, column: column, at: new(atomic.Int32)}
	s.at.Store(-1)
	return s
}

func (s tableSource) request(opts metav1.ListOptions) *rest.Request {
	return s.c.Get().Resource(s.resource).VersionedParams(&opts, scheme.ParameterCodec).
		Param("includeObject", string(metav1.IncludeMetadata))
}

func (s tableSource) list(ctx context.Context, opts metav1.ListOptions) ([]runtime.Object, string, string, error) {
	body, err := s.request(opts).DoRaw(ctx)
	if err != nil {
		return nil, "", "", err
	}
	var t table
	if err := utiljson.Unmarshal(body, &t); err != nil {
		return nil, "", "", fmt.Errorf("decoding a Table of %s: %w", s.resource, err)
	}
	s.learn(&t)
	items := make([]runtime.Object, len(t.Rows))
	for i := range t.Rows {
		items[i] = s.row(&t.Rows[i])
	}
	return items, t.Metadata.ResourceVersion, t.Metadata.Continue, nil
}

func (s tableSource) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	stream, err := s.request(opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	return watch.NewStreamWatcher(&tableDecoder{s: s, stream: stream, dec: json.NewDecoder(stream)},
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")), nil
}

// learn finds the column in t's definitions, when it has them.
func (s tableSource) learn(t *table) {
	if len(t.ColumnDefinitions) == 0 {
		return
	}
	at := int32(-1)
	for i, c := range t.ColumnDefinitions {
		if c.Name == s.column {
			at = int32(i)
		}
	}
	s.at.Store(at)
}

func (s tableSource) row(r *tableRowJSON) *tableRow {
	row := &tableRow{PartialObjectMetadata: r.Object}
	if at := int(s.at.Load()); at >= 0 && at < len(r.Cells) {
		row.cell, row.found = r.Cells[at].(string)
	}
	return row
}

// table is a meta.k8s.io/v1 Table whose rows carry PartialObjectMetadata
// (includeObject=Metadata), decoded in one pass.
type table struct {
	Metadata          metav1.ListMeta `json:"metadata"`
	ColumnDefinitions []struct {
		Name string `json:"name"`
	} `json:"columnDefinitions"`
	Rows []tableRowJSON `json:"rows"`
}

type tableRowJSON struct {
	Cells  []any                        `json:"cells"`
	Object metav1.PartialObjectMetadata `json:"object"`
}

// tableRow is one object of a Table: its metadata and the cell kept.
type tableRow struct {
	metav1.PartialObjectMetadata
	cell  string
	found bool // the Table had the column and the cell was text
}

func (r *tableRow) DeepCopyObject() runtime.Object {
	c := *r
	r.PartialObjectMetadata.DeepCopyInto(&c.PartialObjectMetadata)
	return &c
}

// tableDecoder reads a watch of Tables: each event holds one row, or a
// Status for an error.
type tableDecoder struct {
	s      tableSource
	stream interface{ Close() error }
	dec    *json.Decoder
}

func (d *tableDecoder) Decode() (watch.EventType, runtime.Object, error) {
	var ev struct {
		Type   watch.EventType `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := d.dec.Decode(&ev); err != nil {
		return "", nil, err
	}
	if ev.Type == watch.Error {
		var st metav1.Status
		if err := utiljson.Unmarshal(ev.Object, &st); err != nil {
			return "", nil, fmt.Errorf("decoding a watch error of %s: %w", d.s.resource, err)
		}
		return ev.Type, &st, nil
	}
	var t table
	if err := utiljson.Unmarshal(ev.Object, &t); err != nil {
		return "", nil, fmt.Errorf("decoding a Table of %s: %w", d.s.resource, err)
	}
	d.s.learn(&t)
	if len(t.Rows) != 1 {
		return "", nil, fmt.Errorf("a %s event of %s holds %d rows, want 1", ev.Type, d.s.resource, len(t.Rows))
	}
	if ev.Type == watch.Bookmark {
		return ev.Type, &t.Rows[0].Object, nil
	}
	return ev.Type, d.s.row(&t.Rows[0]), nil
}

func (d *tableDecoder) Close() { d.stream.Close() }
