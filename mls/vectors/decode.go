package vectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// decode unmarshals the case c into v (a pointer to the kind's struct),
// refusing fields v does not know, so a vector that grew a field is noticed.
func decode(c fields, v any) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("decoding case: %w", err)
	}
	return nil
}

// checker collects mismatches between computed and expected values.
type checker struct {
	errs []error
}

// bytes records a mismatch if got differs from want.
func (c *checker) bytes(what string, got, want []byte) {
	if !bytes.Equal(got, want) {
		c.errs = append(c.errs, fmt.Errorf("%s = %x, want %x", what, got, want))
	}
}

// fail records an error if err is non-nil.
func (c *checker) fail(what string, err error) bool {
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %w", what, err))
		return true
	}
	return false
}

// errorf records a failure.
func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// err returns the collected failures (nil when there are none).
func (c *checker) err() error {
	return errors.Join(c.errs...)
}

// decoded is a kind's run that decodes the case into a T (decode, which
// refuses a field T does not name) and checks it with check.
func decoded[T any](check func(v *T) error) func(c fields) error {
	return func(c fields) error {
		var v T
		if err := decode(c, &v); err != nil {
			return err
		}
		return check(&v)
	}
}
