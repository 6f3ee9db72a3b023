// Package browser tests the relay's fleet console (transport/relay/console)
// in a real browser: Debian's chromium, driven with chromedp, against a
// real relay and three real agents on a compressed clock. Run it with
// make test-browser (make check runs it with the other integration
// tests). It saves screenshots at desktop and phone widths in
// $TORPOR_ARTIFACTS (default: a torpor-browser directory in the system's
// temporary directory); docs/images has copies.
package browser
