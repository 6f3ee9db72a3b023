// Package cborjson converts between JSON text and CBOR restricted to the
// JSON data model (RFC 8949 Sections 6.1 and 6.2), without loss: the same
// Governed Object travels in either encoding, and its signature over the
// RFC 8785 canonical form verifies after the conversion. transport/mqtt
// carries payloads in CBOR with it.
package cborjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/fxamacker/cbor/v2"
)

var cborDec = func() cbor.DecMode {
	undefined, err := cbor.NewSimpleValueRegistryFromDefaults(cbor.WithRejectedSimpleValue(cbor.SimpleValue(23)))
	if err != nil {
		panic(err)
	}
	dm, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:  32,
		MaxArrayElements: 4096,
		MaxMapPairs:      4096,
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsForbidden,
		IntDec:           cbor.IntDecConvertNone,
		DefaultMapType:   reflect.TypeOf(map[string]any(nil)),
		UTF8:             cbor.UTF8RejectInvalid,
		NaN:              cbor.NaNDecodeForbidden,
		Inf:              cbor.InfDecodeForbidden,
		SimpleValues:     undefined,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

var cborEnc = func() cbor.EncMode {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	return em
}()

// ToJSON converts a CBOR data item to JSON text following RFC 8949
// Section 6.1, restricted to the JSON data model so the conversion loses
// nothing: the item must be a map with text-string keys, built only from
// maps, arrays, text strings, integers, finite floats, true, false and
// null. Byte strings, tags, undefined, NaN and infinities, duplicate keys,
// indefinite lengths and trailing bytes are refused. A Governed Object
// signed over its JSON members therefore verifies after the conversion:
// the signature covers the RFC 8785 canonical form, which depends only on
// these values.
func ToJSON(b []byte) ([]byte, error) {
	var v any
	if err := cborDec.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("cbor: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("cbor: top-level item is not a map with text keys")
	}
	if err := jsonModel(v, 0); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("cbor: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonModel checks that v, as cborDec decoded it, is in the JSON data model.
func jsonModel(v any, depth int) error {
	switch v := v.(type) {
	case nil, bool, string, uint64, int64, float64:
		return nil
	case map[string]any:
		for _, e := range v {
			if err := jsonModel(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case []any:
		for _, e := range v {
			if err := jsonModel(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case []byte:
		return errors.New("cbor: byte strings have no JSON equivalent")
	}
	return fmt.Errorf("cbor: %T has no JSON equivalent", v)
}

// ToCBOR converts JSON text to CBOR (RFC 8949 Section 6.2) with the core
// deterministic encoding (Section 4.2.1): integers stay integers, other
// numbers, -0 among them, become the shortest float that holds them exactly.
func ToCBOR(j []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("json: %v", err)
	}
	if dec.More() {
		return nil, errors.New("json: trailing data")
	}
	v, err := numbers(v)
	if err != nil {
		return nil, err
	}
	return cborEnc.Marshal(v)
}

// numbers replaces the json.Numbers in v by uint64, int64 or float64.
func numbers(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		return number(v)
	case map[string]any:
		for k, e := range v {
			n, err := numbers(e)
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
	case []any:
		for i, e := range v {
			n, err := numbers(e)
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
	}
	return v, nil
}

func number(n json.Number) (any, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") && s != "-0" {
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u, nil
		}
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("json: number %s out of range", s[:min(len(s), 64)])
	}
	return f, nil
}
