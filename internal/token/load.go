package token

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// LoadKeyringFiles reads several key files as one, in order, with the rules
// of LoadKeyring: the first plain key line of all of them signs, every key
// verifies, VerifyOnly lines only verify. So a file may hold only
// verify-only keys (the new key of a rotation, say) as long as another
// signs.
func LoadKeyringFiles(paths ...string) (*Keyring, error) {
	if len(paths) == 0 {
		return nil, errors.New("no token key file given")
	}
	var signing []byte
	var verify [][]byte
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read token key file: %w", err)
		}
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			n++
			secret, verifyOnly := strings.CutPrefix(line, VerifyOnly)
			secret = strings.TrimSpace(secret)
			if len(secret) < minKeyLen {
				return nil, fmt.Errorf("token key file %s: key %d is %d bytes; at least %d are needed", path, n, len(secret), minKeyLen)
			}
			if verifyOnly || signing != nil {
				verify = append(verify, []byte(secret))
			} else {
				signing = []byte(secret)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read token key file %s: %w", path, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("token key file %s: no token key given", path)
		}
	}
	if signing == nil {
		return nil, fmt.Errorf("token key files %s: every key is %s; one must sign", strings.Join(paths, ", "), strings.TrimSuffix(VerifyOnly, ":"))
	}
	return newKeyring(signing, verify)
}
