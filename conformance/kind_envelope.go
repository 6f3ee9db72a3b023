package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/torpor-dev/torpor/governed/envelope"
)

func init() {
	Register("envelope-attenuation", runEnvelopeAttenuation)
}

// runEnvelopeAttenuation runs the scope-algebra cases of the file the
// vector names in "cases" (beside it; testdata/vectors/envelope holds the
// shared attenuation.json) through governed/envelope's CoversJSON, with the
// registry the file carries, which must be envelope.RegistryV0. Expected and
// got are each case's covered verdict in order; the note names the cases
// that disagree and how many ran.
func runEnvelopeAttenuation(v *Vector) Result {
	var in struct {
		Cases string `json:"cases"`
	}
	if err := v.Decode(&in); err != nil {
		return Broken(err)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(v.Path), in.Cases))
	if err != nil {
		return Broken(err)
	}
	var f struct {
		Registry envelope.Registry `json:"registry_v0"`
		Cases    []struct {
			Name   string          `json:"name"`
			Kind   string          `json:"kind"`
			Parent json.RawMessage `json:"parent"`
			Child  json.RawMessage `json:"child"`
			Expect bool            `json:"expect"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &f); err != nil || len(f.Cases) == 0 {
		return Broken(fmt.Errorf("%s: no cases (%v)", in.Cases, err))
	}
	if fmt.Sprint(f.Registry) != fmt.Sprint(envelope.RegistryV0()) {
		return Result{Status: Fail, Got: "registry", Note: "the file's registry_v0 is not envelope.RegistryV0"}
	}
	var want, got, bad []string
	for _, c := range f.Cases {
		ok, err := f.Registry.CoversJSON(c.Kind, c.Parent, c.Child)
		want = append(want, fmt.Sprint(c.Expect))
		g := fmt.Sprint(ok)
		if err != nil {
			g = "error"
		}
		got = append(got, g)
		if err != nil || ok != c.Expect {
			bad = append(bad, fmt.Sprintf("%q (%v)", c.Name, err))
		}
	}
	r := Compare(strings.Join(want, ","), strings.Join(got, ","))
	r.Note = fmt.Sprintf("%d of %d cases agree", len(f.Cases)-len(bad), len(f.Cases))
	if len(bad) > 0 {
		r.Note += "; disagree: " + strings.Join(bad, ", ")
	}
	return r
}
