# cmake -DFILE=PATH -P write_sha256.cmake: writes PATH.sha256 (the lowercase hex digest and a
# newline), the pin of the reference pack that kb-worker and kb bench check before loading it.
file(SHA256 "${FILE}" digest)
file(WRITE "${FILE}.sha256" "${digest}\n")
