package conformance

import (
	"encoding/json"
	"errors"

	"github.com/torpor-dev/torpor/transport/a2a"
)

func init() { Register("encapsulation-part", runPart) }

// runPart reads the vector's part as its readAs media type with the typed
// readers of transport/a2a (draft-chapman-a2a-mls-03 Sections 7.3–7.6).
func runPart(v *Vector) Result {
	var in struct {
		Expect string          `json:"expect"`
		Reason string          `json:"reason"`
		ReadAs string          `json:"readAs"`
		Part   json.RawMessage `json:"part"`
	}
	if err := v.Decode(&in); err != nil {
		return Broken(err)
	}
	var p a2a.Part
	if err := json.Unmarshal(in.Part, &p); err != nil {
		return Broken(err)
	}
	var err error
	switch in.ReadAs {
	case a2a.MediaTypeDataObject:
		_, err = a2a.ReadDataObject(p)
	case a2a.MediaTypeMLSWire:
		_, err = a2a.ReadMLSWire(p)
	case a2a.MediaTypeMLSHandshake:
		_, err = a2a.ReadHandshake(p)
	default:
		_, err = a2a.ReadPart(p, in.ReadAs)
	}
	got := "accept"
	var pe *a2a.PartError
	if errors.As(err, &pe) {
		got = verdict("reject", pe.Reason())
	} else if err != nil {
		return Result{Status: Fail, Expected: verdict(in.Expect, in.Reason), Got: "error", Note: err.Error()}
	}
	return compareVerdicts([]string{verdict(in.Expect, in.Reason)}, []string{got})
}
