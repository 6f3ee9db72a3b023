package boards

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ModelPath is where Linux shows the device tree's model string.
const ModelPath = "/proc/device-tree/model"

// ErrUnknownModel is returned (wrapped) by Detect when no profile matches
// the model; the caller may fall back to Generic.
var ErrUnknownModel = errors.New("boards: no profile for this board model")

// Detect reads the device-tree model at path ("" means ModelPath) and
// returns the matching profile and the model string. The longest matching
// model prefix wins, so "Raspberry Pi Zero 2 W" is not taken for the Zero W.
func Detect(path string) (Board, string, error) {
	if path == "" {
		path = ModelPath
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Board{}, "", fmt.Errorf("boards: reading the board model: %w", err)
	}
	model := strings.TrimSpace(strings.TrimRight(string(b), "\x00"))
	if model == "" {
		return Board{}, "", fmt.Errorf("%w: %s is empty", ErrUnknownModel, path)
	}
	best, n := Board{}, 0
	for _, p := range profiles {
		for _, m := range p.Models {
			if strings.HasPrefix(model, m) && len(m) > n {
				best, n = p, len(m)
			}
		}
	}
	if n == 0 {
		return Board{}, model, fmt.Errorf("%w: %q", ErrUnknownModel, model)
	}
	return best, model, nil
}

// Generic returns the generic profile for goarch ("arm" or "arm64"), for
// boards Detect does not know.
func Generic(goarch string) (Board, error) {
	switch goarch {
	case "arm64":
		return ByName("generic-arm64")
	case "arm":
		return ByName("generic-armv7")
	}
	return Board{}, fmt.Errorf("boards: no generic profile for GOARCH=%s", goarch)
}
