// Preloaded (node --import) into a server spawned with a file-size limit (ulimit -f): a write past
// the limit then fails with EFBIG, an I/O error the engine sees, instead of SIGXFSZ killing the
// process. This is how tests make the engine's disk fail without root or a full filesystem.
process.on('SIGXFSZ', () => {});
