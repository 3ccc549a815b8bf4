// Starts Debian's Chromium headless through playwright-core, with WebGPU on. Used by the browser
// tests, the screenshot check and the browser benchmarks. Chromium's WebGPU in a headless session
// runs on SwiftShader (a CPU Vulkan) unless a GPU driver is present.
import { chromium } from 'playwright-core';

export const chromiumPath = process.env.SURFGRAD_CHROMIUM || '/usr/bin/chromium';

export async function launch({ headless = true, extraArgs = [] } = {}) {
  return chromium.launch({
    executablePath: chromiumPath,
    headless,
    args: ['--enable-unsafe-webgpu', '--no-sandbox', '--disable-background-networking',
           '--disable-dev-shm-usage', ...extraArgs],
  });
}

// Opens a page and forwards its console and uncaught errors to ours, prefixed.
export async function openPage(browser, url, { prefix = '[page]', quiet = false } = {}) {
  const page = await browser.newPage();
  if (!quiet) page.on('console', (m) => console.log(prefix, m.text()));
  page.on('pageerror', (e) => console.log(prefix, 'uncaught:', e.message));
  await page.goto(url);
  return page;
}
