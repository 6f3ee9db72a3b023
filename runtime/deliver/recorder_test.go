package deliver

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestRecorder: the recorder keeps deliveries in order, runs the hook
// first, fails while told to, answers as told and can stop keeping.
func TestRecorder(t *testing.T) {
	var r Recorder
	ctx := context.Background()
	d1, d2 := testDelivery(), testDelivery()
	d2.ObjectID, d2.Purpose = "o2", "action:open"
	var hooked []string
	r.OnDeliver(func(d Delivery) { hooked = append(hooked, d.ObjectID) })
	if o, err := r.Deliver(ctx, d1); err != nil || !o.OK {
		t.Fatalf("Deliver = %+v, %v; want OK", o, err)
	}
	down := errors.New("application down")
	r.FailWith(down)
	if _, err := r.Deliver(ctx, d2); err != down {
		t.Fatalf("Deliver while failing = %v, want %v", err, down)
	}
	r.FailWith(nil)
	r.AnswerWith(func(d Delivery) Outcome { return Outcome{OK: true, EffectID: "eff-" + d.ObjectID} })
	if o, err := r.Deliver(ctx, d2); err != nil || o.EffectID != "eff-o2" {
		t.Fatalf("Deliver = %+v, %v; want effect eff-o2", o, err)
	}
	r.Discard()
	if _, err := r.Deliver(ctx, d1); err != nil {
		t.Fatal(err)
	}
	want := []string{d1.ObjectID, "o2"}
	if got := r.IDs(); !slices.Equal(got, want) {
		t.Errorf("IDs() = %v, want %v", got, want)
	}
	if got := r.Purposes(); !slices.Equal(got, []string{d1.Purpose, "action:open"}) {
		t.Errorf("Purposes() = %v", got)
	}
	if got := r.Got(); len(got) != 2 || got[1].ObjectID != "o2" {
		t.Errorf("Got() = %+v", got)
	}
	if want := []string{d1.ObjectID, "o2", "o2", d1.ObjectID}; !slices.Equal(hooked, want) {
		t.Errorf("hook saw %v, want %v", hooked, want)
	}
}
