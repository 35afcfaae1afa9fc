package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeResult feeds Decode arbitrary documents, seeded with every
// stored result (reports/testdata, baselines/): it never panics, it fails
// only with an *InvalidResultError or a decode error, and whatever it
// accepts re-encodes (JSON) to a document that validates and decodes to
// the same rendering again.
func FuzzDecodeResult(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"testdata/*.result.json", "testdata/*.json.golden", "../baselines/*.json", "../baselines/*/*.json", "../cmd/testdata/compare/*.json"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	if len(seeds) < 5 {
		f.Fatalf("only %d stored results to seed from: %v", len(seeds), seeds)
	}
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		small, err := shrinkJSON(data)
		if err != nil {
			f.Fatalf("seed %s: %v", path, err)
		}
		if _, err := Decode(small); err != nil {
			f.Fatalf("seed %s, shrunk, does not decode: %v", path, err)
		}
		f.Add(small)
	}
	f.Add([]byte(`{"schema_version": 1, "modes": [{"series": {"confirmed": []}}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			var invalid *InvalidResultError
			if !errors.As(err, &invalid) && r != nil {
				t.Fatalf("error %v with a result", err)
			}
			return
		}
		var once bytes.Buffer
		if err := JSON(&once, r); err != nil {
			t.Fatalf("a decoded result does not re-encode: %v", err)
		}
		if err := Validate(once.Bytes()); err != nil {
			t.Fatalf("a decoded result re-encodes to an invalid document: %v\n%s", err, once.String())
		}
		r2, err := Decode(once.Bytes())
		if err != nil {
			t.Fatalf("the re-encoded result does not decode: %v", err)
		}
		var twice bytes.Buffer
		if err := JSON(&twice, r2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatalf("re-encoding is not stable:\n%s\n---\n%s", once.String(), twice.String())
		}
		// Every renderer takes what Decode accepts.
		for name, render := range map[string]func(*bytes.Buffer) error{
			"markdown": func(b *bytes.Buffer) error { return Markdown(b, r) },
			"table":    func(b *bytes.Buffer) error { return Table(b, r) },
		} {
			var b bytes.Buffer
			if err := render(&b); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	})
}

// shrinkJSON is a stored result cut to a seed the fuzzer can afford:
// every array cut to its first element and the document compacted, so
// every field the result holds is still there (the fuzzer mutates what it
// is given) in a few KB instead of ~100 (a whole result's series and id
// ranges made each execution cost ~0.2 s, and the fuzzer spent its time
// minimizing them).
func shrinkJSON(data []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var cut func(any) any
	cut = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = cut(e)
			}
		case []any:
			if len(x) > 1 {
				x = x[:1]
			}
			for i, e := range x {
				x[i] = cut(e)
			}
			return x
		}
		return v
	}
	return json.Marshal(cut(v))
}
