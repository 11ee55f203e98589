package couchtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// CouchDB keeps the members of a document in the order they were written and answers with
// compact JSON, so documents here are ordered member lists rather than Go maps: a document
// read back must compare byte for byte with the recordings.

type member struct {
	key   string
	value json.RawMessage // compact
}

type object []member

var errNotObject = errors.New("not a JSON object")

// The JSON literals, also CouchDB's boolean query parameter values.
const (
	jsonTrue  = "true"
	jsonFalse = "false"
)

// parseObject reads one JSON object keeping its member order; values are compacted.
func parseObject(data []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errNotObject
	}
	obj := object{}
	for dec.More() {
		keyTok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		obj = obj.with(keyTok.(string), compact(raw))
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return obj, nil
}

// UnmarshalJSON decodes into an ordered object (recorded task lists, for one).
func (o *object) UnmarshalJSON(data []byte) error {
	obj, err := parseObject(data)
	*o = obj
	return err
}

func (o object) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// str is the member's value if it is a JSON string.
func (o object) str(key string) (string, bool) {
	raw, ok := o.get(key)
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// with sets a member, in place if it exists (JSON's last-one-wins for duplicates), else at the end.
func (o object) with(key string, value json.RawMessage) object {
	out := make(object, 0, len(o)+1)
	replaced := false
	for _, m := range o {
		if m.key == key {
			m.value, replaced = value, true
		}
		out = append(out, m)
	}
	if !replaced {
		out = append(out, member{key, value})
	}
	return out
}

func (o object) without(keys ...string) object {
	out := make(object, 0, len(o))
next:
	for _, m := range o {
		for _, k := range keys {
			if m.key == k {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// MarshalJSON writes the members in order, compact.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(m.key))
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is compact JSON without Go's HTML escaping: CouchDB writes "<" as it is where Go
// would write "\u003c". It is only called on values built here, which always encode.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("couchtest: cannot encode " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// compact is only given JSON that a decoder already accepted, so it cannot fail; the
// fallback keeps the value as it came.
func compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// decodeValue turns JSON into Go values for collation, keeping numbers exact.
func decodeValue(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}
