package envelope

import "fmt"

// CoversJSON decides coverage for a parent and child given as JSON, of one
// of the shapes the algebra is built from: "act" and "res" (JSON strings),
// "cap", "cp", "scope" (objects) and "envelope" (arrays of scopes). Each is
// read strictly (internal/strictjson, no unknown members). covered is false
// with a nil error when the child is well formed and not covered; err is set
// when either side does not parse or kind is not one of these.
func (r Registry) CoversJSON(kind string, parent, child []byte) (covered bool, err error) {
	switch kind {
	case "act":
		return decidePair(parent, child, func(p, c string) error { return boolErr(r.CoversAct(p, c)) })
	case "res":
		return decidePair(parent, child, func(p, c string) error { return boolErr(CoversRes(p, c)) })
	case "cap":
		return decidePair(parent, child, func(p, c Cap) error { return boolErr(CoversCap(p, c)) })
	case "cp":
		return decidePair(parent, child, func(p, c Counterparties) error { return boolErr(CoversCP(&p, &c)) })
	case "scope":
		p, err := ParseScope(parent)
		if err != nil {
			return false, fmt.Errorf("parent: %w", err)
		}
		c, err := ParseScope(child)
		if err != nil {
			return false, fmt.Errorf("child: %w", err)
		}
		return verdict(r.Covers(p, c))
	case "envelope":
		p, err := ParseEnvelope(parent)
		if err != nil {
			return false, fmt.Errorf("parent: %w", err)
		}
		c, err := ParseEnvelope(child)
		if err != nil {
			return false, fmt.Errorf("child: %w", err)
		}
		return verdict(r.CoversEnvelope(p, c))
	}
	return false, fmt.Errorf("envelope: unknown kind %q", kind)
}

func decidePair[T any](parent, child []byte, f func(p, c T) error) (bool, error) {
	var p, c T
	if err := decodeStrict(parent, &p); err != nil {
		return false, fmt.Errorf("parent: %w", err)
	}
	if err := decodeStrict(child, &c); err != nil {
		return false, fmt.Errorf("child: %w", err)
	}
	return verdict(f(p, c))
}

func boolErr(ok bool) error {
	if ok {
		return nil
	}
	return ErrWidened
}

// verdict turns ErrWidened into (false, nil) and other errors through.
func verdict(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case isWidened(err):
		return false, nil
	}
	return false, err
}
