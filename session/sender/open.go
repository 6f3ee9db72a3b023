package sender

import (
	"net/http"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/store"
)

// Open opens (creating it if needed) the bbolt file at path for key's
// sessions and returns a Client over it; Close it when done. A file or
// directory that others may read is refused (session.CheckPrivate): it
// holds the sessions' secrets. hc and clk may be nil (defaults).
func Open(path string, key *did.PrivateKey, hc *http.Client, clk clock.Clock) (*Client, error) {
	db, err := store.Open(path, nil)
	if err != nil {
		return nil, err
	}
	if err := session.CheckPrivate(path); err != nil {
		db.Close()
		return nil, err
	}
	s, err := session.New(session.Config{Key: key, Clock: clk})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Client{Sessions: s, DB: db, Key: key, HTTP: hc, Clock: clk}, nil
}

// Close closes the client's bbolt file.
func (c *Client) Close() error { return c.DB.Close() }
