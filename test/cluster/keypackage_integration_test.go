//go:build integration

package cluster

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// TestKeyPackageOnceAcrossRelays: a device publishes 30 KeyPackages and a
// last-resort one; 60 fetches spread over 3 relays at once get each pooled
// KeyPackage exactly once and then the last-resort one. The one caller's
// rate limit is the fleet's (30 a minute by default, whichever relay it
// reaches), so the relays allow it 100.
func TestKeyPackageOnceAcrossRelays(t *testing.T) {
	f := startFleet(t, 3, "--keypackage-rate", "100")
	const pool, fetches = 30, 60
	dev := relaytest.Key(t, 7)
	kps := make([][]byte, pool)
	for i := range kps {
		kps[i] = relaytest.KeyPackage(t, dev)
	}
	publish(t, f.relays[0].addr, dev, device{mode: "sleep", kps: kps, lastResort: relaytest.KeyPackage(t, dev)})
	type got struct {
		Wire       string `json:"wire"`
		LastResort bool   `json:"lastResort"`
	}
	auth := bearer.Authorization(relaytest.Token(t, relaytest.Key(t, 8), publicURL)) // fetches need a token
	answers := make([]got, fetches)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range fetches {
		wg.Go(func() {
			<-start
			req, err := http.NewRequest(http.MethodGet, f.relays[i%3].addr+"/a/"+dev.DID().String()+"/mls/key-package", nil)
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Authorization", auth)
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("fetch %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&answers[i]) != nil {
				t.Errorf("fetch %d: status %d", i, resp.StatusCode)
			}
		})
	}
	close(start)
	wg.Wait()
	pooled, lastResort := map[string]int{}, map[string]int{}
	for _, a := range answers {
		if a.LastResort {
			lastResort[a.Wire]++
		} else {
			pooled[a.Wire]++
		}
	}
	for w, n := range pooled {
		if n != 1 {
			t.Errorf("KeyPackage %s handed out %d times", w, n)
		}
	}
	if len(pooled) != pool || len(lastResort) != 1 || lastResort[firstKey(lastResort)] != fetches-pool {
		t.Errorf("%d distinct pooled KeyPackages, last-resort answers %v; want %d and one last-resort KeyPackage %d times", len(pooled), lastResort, pool, fetches-pool)
	}
	t.Logf("%d fetches over 3 relays: %d pooled KeyPackages once each, %d last-resort answers", fetches, len(pooled), fetches-len(pooled))
}

func firstKey(m map[string]int) string {
	for k := range m {
		return k
	}
	return ""
}
