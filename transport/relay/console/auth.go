package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/transport/bearer"
)

const (
	// SessionTTL is how long a console session lasts.
	SessionTTL = 12 * time.Hour
	// LoginTTL is the longest lifetime of a login token the console
	// accepts (exp − iat); torporctl fleet open makes them for 2 minutes.
	LoginTTL = 5 * time.Minute
	// SecretFile is the file in the relay's data directory that holds the
	// key its session cookies are signed with.
	SecretFile = "fleet-session.key"
	// MaxSpentLogins caps the login tokens a console remembers as used
	// itself (Config.Spent nil).
	MaxSpentLogins = 4096
	// cookieName is the session cookie's name; over https it gets the
	// __Host- prefix (RFC 6265bis, Section 4.1.3.2), which browsers accept
	// only with Secure, Path=/ and no Domain.
	cookieName = "torpor_fleet"
	// sessionMAC is the domain separation of the cookie's HMAC.
	sessionMAC = "torpor-fleet-session v1\n"
)

// LoadSecret returns the session key in dir's SecretFile, making a random
// one of 32 bytes (mode 0600) when there is none. Each relay of a fleet
// keeps its own: a session opened on one relay is not valid on another
// unless the operator copies the file to all of them.
func LoadSecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, SecretFile)
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) < 32 {
			return nil, fmt.Errorf("console: %s: %d bytes, want at least 32", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("console: %v", err)
	}
	b = make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("console: %v", err)
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("console: %v", err)
	}
	return b, nil
}

// auth decides who may see the console.
type auth struct {
	operators map[string]bool
	// also accepts operators beyond operators (Config.AlsoOperator).
	also   func(id string) bool
	secret []byte
	secure bool // the public origin is https
	login  bearer.Verifier
	api    bearer.Verifier
	now    func() time.Time
	spent  shared.Spent // login tokens accepted (Config.Spent)
}

// errNotOperator refuses a DID that is not an operator.
var errNotOperator = errors.New("this DID is not an operator of this relay")

// cookie returns the session cookie's name.
func (a *auth) cookie() string {
	if a.secure {
		return "__Host-" + cookieName
	}
	return cookieName
}

// mac is the cookie's signature over the operator's DID and its expiry.
func (a *auth) mac(id string, exp int64) string {
	m := hmac.New(sha256.New, a.secret)
	m.Write([]byte(sessionMAC + id + "\n" + strconv.FormatInt(exp, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// session returns the cookie of a session for operator id from now.
func (a *auth) session(id string) *http.Cookie {
	exp := a.now().Add(SessionTTL)
	v := id + "." + strconv.FormatInt(exp.Unix(), 10) + "." + a.mac(id, exp.Unix())
	return &http.Cookie{Name: a.cookie(), Value: v, Path: "/", Expires: exp, MaxAge: int(SessionTTL / time.Second),
		HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteStrictMode}
}

// logout returns the cookie that ends a session.
func (a *auth) logout() *http.Cookie {
	return &http.Cookie{Name: a.cookie(), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteStrictMode}
}

// fromCookie returns the operator whose valid session cookie r carries.
func (a *auth) fromCookie(r *http.Request) (string, error) {
	c, err := r.Cookie(a.cookie())
	if err != nil {
		return "", errNoSession
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 {
		return "", errBadSession
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !hmac.Equal([]byte(a.mac(parts[0], exp)), []byte(parts[2])) {
		return "", errBadSession
	}
	if !a.now().Before(time.Unix(exp, 0)) {
		return "", errors.New("your session expired")
	}
	if !a.isOperator(parts[0]) {
		return "", errNotOperator
	}
	return parts[0], nil
}

var (
	errNoSession  = errors.New("not logged in")
	errBadSession = errors.New("the session cookie is not one this relay signed")
)

// fromBearer returns the operator an API token (purpose
// bearer.PurposeFleet) proves.
func (a *auth) fromBearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", errNoSession
	}
	id, err := a.api.Verify(h)
	if err != nil {
		return "", err
	}
	if !a.isOperator(id.String()) {
		return "", errNotOperator
	}
	return id.String(), nil
}

// redeem checks a login token and spends it: a token is accepted once,
// at any relay of a fleet that shares its memory of spent tokens. A
// refusal of a token that verified returns its DID with the error (for
// the audit log); one that did not returns the zero DID.
func (a *auth) redeem(ctx context.Context, tok string) (did.DID, error) {
	t, err := a.login.VerifyToken(tok)
	if err != nil {
		return did.DID{}, err
	}
	if !a.isOperator(t.DID().String()) {
		return t.DID(), errNotOperator
	}
	err = a.spent.Spend(ctx, sha256.Sum256([]byte(t.String())), time.Unix(t.Claims.Exp, 0).Add(bearer.DefaultSkew), a.now())
	switch {
	case errors.Is(err, shared.ErrReplayed):
		return t.DID(), errors.New("this login link was used already; run torporctl fleet open again")
	case errors.Is(err, shared.ErrFull):
		return t.DID(), errors.New("too many logins at once; try again in a few minutes")
	case err != nil:
		return t.DID(), errors.New("the relay cannot reach its memory of used login links; try again later")
	}
	return t.DID(), nil
}

// isOperator reports whether id may see the console: one of
// Config.Operators, or one Config.AlsoOperator accepts.
func (a *auth) isOperator(id string) bool {
	return a.operators[id] || (a.also != nil && a.also(id))
}

// operatorKey is the context key of the operator a request is made for.
type operatorKey struct{}

// WithOperator returns ctx for a request of the operator op, whom
// Source.Visible reads (OperatorOf).
func WithOperator(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, operatorKey{}, op)
}

// OperatorOf returns the operator ctx's request is made for; empty for
// the relay's own reads (its metrics).
func OperatorOf(ctx context.Context) string {
	op, _ := ctx.Value(operatorKey{}).(string)
	return op
}
