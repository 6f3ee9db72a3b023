package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

func init() {
	Register("agent-card-extension", runCardExtension)
	Register("agent-card-build", runCardBuild)
}

// runCardExtension checks a card's offline-delivery extension entry with
// the validator the relay's cards are built against
// (a2a.ValidateOfflineDeliveryExtension, the extension's JSON Schema).
func runCardExtension(v *Vector) Result {
	var in struct {
		Extension json.RawMessage `json:"extension"`
		Expect    struct {
			SchemaOk bool `json:"schemaOk"`
		} `json:"expect"`
	}
	if err := v.Decode(&in); err != nil {
		return Broken(err)
	}
	err := a2a.ValidateOfflineDeliveryExtension(in.Extension)
	r := Compare(fmt.Sprintf("schemaOk=%v", in.Expect.SchemaOk), fmt.Sprintf("schemaOk=%v", err == nil))
	if err != nil {
		r.Note = err.Error()
	}
	return r
}

// runCardBuild builds the agent's card for each case with a2a.BuildCard,
// signs it as the device does, publishes it over the real device link to
// the real relay and reads it back from /a/{did}/.well-known/agent-card.json;
// the served card must verify (kid = the agent's DID) and declare the
// offline-delivery extension, with params.mode, exactly when the case sets
// offlineDeliveryMode. A case without a mode publishes always_on.
func runCardBuild(v *Vector) Result {
	var in struct {
		BuildOptions struct {
			BaseURL     string `json:"baseUrl"`
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"buildOptions"`
		Cases []struct {
			OfflineDeliveryMode string `json:"offlineDeliveryMode"`
			ExpectExtension     bool   `json:"expectExtension"`
			ExpectMode          string `json:"expectMode"`
		} `json:"cases"`
	}
	if err := v.Decode(&in); err != nil {
		return Broken(err)
	}
	dir, err := v.TempDir()
	if err != nil {
		return Broken(err)
	}
	h, err := startRelay(dir, time.Now(), queuebounds.Default())
	if err != nil {
		return Result{Status: Fail, Got: "error", Note: err.Error()}
	}
	defer h.close()
	c, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: h.agent, Clock: h.clk})
	if err != nil {
		return Result{Status: Fail, Got: "error", Note: err.Error()}
	}
	h.dev = c
	var exp, got []string
	for i, tc := range in.Cases {
		e := fmt.Sprintf("case%d:extension=%v", i, tc.ExpectExtension)
		if tc.ExpectExtension {
			e += ",mode=" + tc.ExpectMode
		}
		exp = append(exp, e)
		g, err := h.buildCase(in.BuildOptions.Name, in.BuildOptions.Description, tc.OfflineDeliveryMode)
		if err != nil {
			return Result{Status: Fail, Expected: strings.Join(exp, " "), Got: "error", Note: fmt.Sprintf("case %d: %v", i, err)}
		}
		got = append(got, fmt.Sprintf("case%d:%s", i, g))
	}
	return Compare(strings.Join(exp, " "), strings.Join(got, " "))
}

func (h *relayHarness) buildCase(name, description, offline string) (string, error) {
	mode := offline
	if mode == "" {
		mode = string(wake.AlwaysOn)
	}
	card, err := h.card(mode, name, description)
	if err != nil {
		return "", err
	}
	if _, err := h.dev.Publish(context.Background(), wire.State{Mode: mode, Card: card}); err != nil {
		return "", err
	}
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/a/"+h.agent.DID().String()+a2a.CardPath, nil)
	req.Header.Set("A2A-Version", "1.0") // the signed card, not the 0.3 view
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	served, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET card: %s", resp.Status)
	}
	if err := a2a.VerifyCard(served, h.agent.DID()); err != nil {
		return "", err
	}
	c, err := a2a.ParseCard(served)
	if err != nil {
		return "", err
	}
	e, ok := c.Extension(a2a.ExtOfflineDelivery)
	if !ok {
		return "extension=false", nil
	}
	raw, _ := json.Marshal(e)
	if err := a2a.ValidateOfflineDeliveryExtension(raw); err != nil {
		return "", err
	}
	return "extension=true,mode=" + c.OfflineMode(), nil
}
