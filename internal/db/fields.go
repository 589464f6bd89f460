package db

import (
	"bytes"
	"encoding/json"
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
