"""Headless Chromium for the page tests: the browser (None where none is installed), a page's DOM after its
scripts ran, and the probe script that reads what the page drew."""

from __future__ import annotations

import html
import re
import shutil
import subprocess

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def _dom(url: str, tmp_path, width: int = 1400) -> str:
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},900",
                          "--hide-scrollbars", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


# Measures the page as a reader sees it and writes the results into <body data-...> for --dump-dom: the body's
# horizontal overflow, and for each figure the number of pixels drawn in each method's colour (read back from the
# decoded PNG through a canvas; data: images are same-origin).
_PROBE = """<script>
window.addEventListener('load', () => {
  const b = document.body, root = document.documentElement;
  b.dataset.overflow = Math.max(root.scrollWidth, b.scrollWidth) - window.innerWidth;
  const out = {};
  document.querySelectorAll('figure[data-figure]').forEach(f => {
    const img = f.querySelector('img'), c = document.createElement('canvas');
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
    const px = ctx.getImageData(0, 0, c.width, c.height).data, colours = JSON.parse(f.dataset.colours), n = {};
    for (const [name, hex] of Object.entries(colours)) {
      const r = parseInt(hex.slice(1, 3), 16), g = parseInt(hex.slice(3, 5), 16), bl = parseInt(hex.slice(5, 7), 16);
      let k = 0;
      for (let i = 0; i < px.length; i += 4) if (px[i] === r && px[i + 1] === g && px[i + 2] === bl) k++;
      n[name] = [hex, k];
    }
    out[f.dataset.figure] = n;
  });
  b.dataset.pixels = JSON.stringify(out);
});
</script></body>"""


def _probe(dom: str, name: str) -> str:
    return html.unescape(re.search(rf'data-{name}="([^"]*)"', dom).group(1))
