// The page's surroundings, stood in for or watched by the browser tests: visibility, the camera, notifications,
// the banner, a slower machine.
//
// How the files of Tests/Web/js are run: support.page_function(file, name) makes the whole file the body of the
// function page.evaluate calls, ending in `return name(arg)`, and support.page_script(file, name) runs `name()`
// the same way as an init script. So each file is plain declarations, run in the page and seeing only its
// globals; `node --check` reads each (Tests/WebUnit/web-snippets.test.mjs).

/** The page shown or hidden ("visible", "hidden"), as the browser tells it when the tab changes. */
function setVisibility(state) {
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
  document.dispatchEvent(new Event("visibilitychange"));
}

/** A camera and a QR detector (this Chromium has no BarcodeDetector): the detector sees `window.__qr` once
 *  the test sets it. */
function standInCamera() {
  window.BarcodeDetector = class {
    static async getSupportedFormats() {
      return ["qr_code"];
    }
    async detect() {
      return window.__qr ? [{ rawValue: window.__qr }] : [];
    }
  };
  navigator.mediaDevices.getUserMedia = async () => {
    const canvas = Object.assign(document.createElement("canvas"), { width: 320, height: 240 });
    canvas.getContext("2d").fillRect(0, 0, 320, 240);
    return canvas.captureStream();
  };
}

/** Notifications allowed and kept in `window.__notes` instead of shown (an init script). */
function fakeNotifications() {
  window.__notes = [];
  window.Notification = class {
    static permission = "granted";
    static requestPermission() {
      return Promise.resolve("granted");
    }
    constructor(title, options) {
      this.title = title;
      this.body = options.body;
      window.__notes.push(this);
    }
    close() {}
  };
}

/** Counts every change of the banner in `window.__bannerChanges` (an alert region is read out at each). */
function watchBanner() {
  window.__bannerChanges = 0;
  new MutationObserver(() => window.__bannerChanges++).observe(document.getElementById("banner"), {
    childList: true,
    subtree: true,
    characterData: true,
  });
}

/** A slower machine: each encryption and decryption waits 100 ms more. */
function slowDownCrypto() {
  for (const name of ["encrypt", "decrypt"]) {
    const real = crypto.subtle[name].bind(crypto.subtle);
    crypto.subtle[name] = (...args) => new Promise((resolve) => setTimeout(resolve, 300)).then(() => real(...args));
  }
}
