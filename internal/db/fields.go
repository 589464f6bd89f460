package db

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// marshalFields writes a JSON object of string fields, given as name,
// value pairs, in that order, leaving out empty values: unmarshalFields
// reads a missing field as empty. It is how rows keep small structs in a
// JSON column without a storage type of their own.
func marshalFields(kv ...string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[i])
		v, err := json.Marshal(kv[i+1])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// unmarshalFields reads what marshalFields wrote.
func unmarshalFields(b []byte) (map[string]string, error) {
	var f map[string]string
	err := json.Unmarshal(b, &f)
	return f, err
}

// timeFormat sorts as text in time order.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// formatTime writes t as a column holds it: in timeFormat, in UTC. A nil
// or zero time is NULL.
func formatTime(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return t.UTC().Format(timeFormat)
}

// parseTime reads a time formatTime wrote. NULL, or text in another
// format, is nil.
func parseTime(s sql.NullString) *time.Time {
	if !s.Valid {
		return nil
	}
	t, err := time.Parse(timeFormat, s.String)
	if err != nil {
		return nil
	}
	return &t
}

// jsonOrNull writes v as a JSON array. An empty v is NULL.
func jsonOrNull[T any](v []T) any {
	if len(v) == 0 {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err)) // plain slices of strings and structs always marshal
	}
	return string(b)
}

// boolOrNull writes b as 1 or 0. A nil b is NULL.
func boolOrNull(b *bool) any {
	if b == nil {
		return nil
	}
	if *b {
		return 1
	}
	return 0
}

// ptrOrNull writes what p points to. A nil p is NULL.
func ptrOrNull[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// nullString reads a text column. NULL is nil.
func nullString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// nullBool reads a boolean column. NULL is nil.
func nullBool(b sql.NullBool) *bool {
	if !b.Valid {
		return nil
	}
	v := b.Bool
	return &v
}

// decodeFinalizers reads a finalizers column, a JSON array. NULL is nil.
func decodeFinalizers(s sql.NullString) ([]string, error) {
	if !s.Valid {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(s.String), &out); err != nil {
		return nil, fmt.Errorf("finalizers: %w", err)
	}
	return out, nil
}
