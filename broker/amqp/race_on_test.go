//go:build race

package amqp

// raceDetector is true in a test binary built with -race: timing
// measurements then mean nothing (TestPublisherVersusBareClient skips).
const raceDetector = true
