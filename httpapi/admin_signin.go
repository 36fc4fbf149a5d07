package httpapi

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strings"
	"time"
)

// Failed sign-ins to the job UI. A limit per address alone let one
// guesser lock every operator out: behind a proxy without TRUSTED_PROXIES
// every request has the proxy's address (a review finding). So a browser
// that signed in once carries a device cookie (adminDeviceCookie, signed
// with a key from SECRET_KEY and bound to the credential), and the limits
// are:
//
//   - a browser with a valid device cookie: ten failures a minute for that
//     cookie alone; nothing anyone else sends counts against it;
//   - any other request (no cookie, or one that does not verify): ten
//     failures a minute per client address, and adminGlobalFailures a
//     minute from all of them together (a guesser with many addresses is
//     slowed as much as one with one).
//
// While a key is over its limit nothing it sends is checked, so guessing
// gains nothing. An operator whose browser signed in before keeps getting
// in while someone hammers the UI; a first sign-in from a new browser
// waits for the attack to stop (or for TRUSTED_PROXIES to tell clients
// apart).
const (
	adminDeviceCookie   = "ff_admin_device"
	adminDeviceLifetime = 90 * 24 * time.Hour
	adminFailuresBurst  = 10
	adminGlobalFailures = 30
)

// adminSignIns holds the job UI's failed-sign-in limits and its device
// cookies' key.
type adminSignIns struct {
	user, password string
	key            []byte
	secure         bool // device cookies only over https (PUBLIC_URL)
	perDevice      *Limiter
	perAddress     *Limiter
	global         *Limiter
	now            func() time.Time
}

// newAdminSignIns returns the limits of one credential; secretKey
// (SECRET_KEY) signs the device cookies (nil: a random key, so cookies
// hold for this process only).
func newAdminSignIns(user, password string, secretKey []byte, secure bool) *adminSignIns {
	key := make([]byte, 32)
	if len(secretKey) > 0 {
		k, err := hkdf.Key(sha256.New, secretKey, nil, "followfeed job UI device cookies v1", 32)
		if err == nil {
			key = k
		}
	} else {
		_, _ = rand.Read(key) // never fails (crypto/rand)
	}
	perMinute := float64(adminFailuresBurst) / 60
	return &adminSignIns{user: user, password: password, key: key, secure: secure,
		perDevice: NewLimiter(perMinute, adminFailuresBurst), perAddress: NewLimiter(perMinute, adminFailuresBurst),
		global: NewLimiter(float64(adminGlobalFailures)/60, adminGlobalFailures), now: time.Now}
}

// deviceMAC signs a device cookie's payload (id and expiry) for the
// current credential: a cookie from before a password change no longer
// verifies.
func (a *adminSignIns) deviceMAC(payload []byte) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(a.user + "\x00" + a.password + "\x00"))
	m.Write(payload)
	return m.Sum(nil)
}

// device returns the key of r's valid, unexpired device cookie, or "".
func (a *adminSignIns) device(r *http.Request) string {
	c, err := r.Cookie(adminDeviceCookie)
	if err != nil {
		return ""
	}
	p, s, ok := strings.Cut(c.Value, ".")
	if !ok {
		return ""
	}
	// Strict: one spelling per cookie (the last character's unused
	// bits zero), as signed links (auth.LinkSigner.Verify).
	payload, err1 := base64.RawURLEncoding.Strict().DecodeString(p)
	mac, err2 := base64.RawURLEncoding.Strict().DecodeString(s)
	if err1 != nil || err2 != nil || len(payload) != 24 || !hmac.Equal(mac, a.deviceMAC(payload)) {
		return ""
	}
	if exp := time.Unix(int64(binary.BigEndian.Uint64(payload[16:])), 0); !a.now().Before(exp) {
		return ""
	}
	return p // unique per cookie: its id and expiry
}

// issueDevice sets a new device cookie for a browser that just signed in.
func (a *adminSignIns) issueDevice(w http.ResponseWriter) {
	payload := make([]byte, 24)
	_, _ = rand.Read(payload[:16])
	exp := a.now().Add(adminDeviceLifetime)
	binary.BigEndian.PutUint64(payload[16:], uint64(exp.Unix()))
	http.SetCookie(w, &http.Cookie{Name: adminDeviceCookie,
		Value: base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(a.deviceMAC(payload)),
		Path:  AdminPrefix, MaxAge: int(adminDeviceLifetime.Seconds()), HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteStrictMode})
}

// blocked says whether a request from device (or, without one, from the
// client address ip) may not be checked now, how long until it may, and
// why.
func (a *adminSignIns) blocked(device, ip string) (bool, time.Duration, string) {
	if device != "" {
		if b, d := a.perDevice.Blocked(device); b {
			return true, d, "too many failed sign-ins to the job UI from this browser; wait and try again"
		}
		return false, 0, ""
	}
	if b, d := a.perAddress.Blocked(ip); b {
		return true, d, "too many failed sign-ins to the job UI from this address; wait and try again (a browser that signed in here before is not held up)"
	}
	if b, d := a.global.Blocked(""); b {
		return true, d, "too many failed sign-ins to the job UI; wait and try again (a browser that signed in here before is not held up)"
	}
	return false, 0, ""
}

// failed counts a failed attempt against the keys blocked checks.
func (a *adminSignIns) failed(device, ip string) {
	if device != "" {
		a.perDevice.Allow(device)
		return
	}
	a.perAddress.Allow(ip)
	a.global.Allow("")
}
