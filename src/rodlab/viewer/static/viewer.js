// rodlab view: one run's rods as tubes, its obstacles, a time slider and its metrics.
// Reads the JSON in <script id="rodlab-data"> (written by rodlab.viewer.page) and draws it with
// the global THREE (three.js, inlined before this script). Units are SI: metres, seconds.
// window.rodlabViewer exposes the state for scripts and tests: nFrames, frame(), setFrame(k), ...
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("rodlab-data").textContent);

  function floats(b64) {
    const s = atob(b64);
    const u = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
    return new Float32Array(u.buffer);
  }

  const X = floats(data.x_b64);             // (F, N, 3) positions [m]
  const M1 = data.m1_b64 ? floats(data.m1_b64) : null;  // (F, N, 3) material director d1 per vertex, or none
  const RADIUS = floats(data.radius_b64);   // (N,) tube radius [m]
  const offsets = data.rod_offsets;
  const nRods = offsets.length - 1;
  const N = offsets[nRods];
  const F = data.t.length;
  if (X.length !== F * N * 3) throw new Error("rodlab view: positions hold " + X.length + " floats, expected " + F * N * 3);
  if (M1 && M1.length !== F * N * 3) throw new Error("rodlab view: directors hold " + M1.length + " floats, expected " + F * N * 3);
  const SIDES = N > 20000 ? 6 : (N > 2000 ? 8 : 16);
  const PALETTE = [0x1f77b4, 0xd62728, 0x2ca02c, 0xff7f0e, 0x9467bd, 0x8c564b, 0xe377c2, 0x17becf, 0xbcbd22, 0x7f7f7f];

  // ---- renderer, scene, lights ---------------------------------------------------------------
  const view = document.getElementById("view");
  let renderer;
  try {
    renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  } catch (err) {
    view.textContent = "rodlab view: this browser cannot create a WebGL context (" + err.message + ")";
    throw err;
  }
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  renderer.setClearColor(0xffffff, 1);
  view.appendChild(renderer.domElement);
  const scene = new THREE.Scene();
  const camera = new THREE.PerspectiveCamera(35, 1, 1e-4, 1e4);
  camera.up.set(0, 0, 1);                   // rodlab's gravity points along -z
  const hemi = new THREE.HemisphereLight(0xffffff, 0xa0a0b0, 2.2);
  hemi.position.set(0, 0, 1);
  scene.add(hemi);
  const keyLight = new THREE.DirectionalLight(0xffffff, 2.0);
  camera.add(keyLight);
  keyLight.position.set(0.5, 1, 0.2);
  scene.add(camera);

  // ---- bounds and camera ---------------------------------------------------------------------
  const lo = new THREE.Vector3().fromArray(data.bbox[0]);
  const hi = new THREE.Vector3().fromArray(data.bbox[1]);
  function grow(p, r) {
    lo.min(new THREE.Vector3(p[0] - r, p[1] - r, p[2] - r));
    hi.max(new THREE.Vector3(p[0] + r, p[1] + r, p[2] + r));
  }
  for (const ob of data.obstacles) {
    if (ob.kind === "sphere") grow(ob.center, ob.radius);
    if (ob.kind === "capsule") { grow(ob.a, ob.radius); grow(ob.b, ob.radius); }
    if (ob.kind === "mesh") for (let i = 0; i < ob.vertices.length; i += 3) grow(ob.vertices.slice(i, i + 3), 0);
  }
  for (const b of data.bodies) grow(b.x0, Math.hypot(b.half[0], b.half[1], b.half[2]));
  const center = lo.clone().add(hi).multiplyScalar(0.5);
  const size = Math.max(hi.clone().sub(lo).length(), 1e-6);
  const orbit = { target: center.clone(), azimuth: -Math.PI / 2 + 0.55, elevation: 0.45,
                  distance: 0.5 * size / Math.sin(THREE.MathUtils.degToRad(camera.fov) / 2) * 1.05 };

  function placeCamera() {
    const ce = Math.cos(orbit.elevation);
    camera.position.set(orbit.target.x + orbit.distance * ce * Math.cos(orbit.azimuth),
                        orbit.target.y + orbit.distance * ce * Math.sin(orbit.azimuth),
                        orbit.target.z + orbit.distance * Math.sin(orbit.elevation));
    camera.near = orbit.distance / 1000;
    camera.far = orbit.distance * 100 + size * 10;
    camera.lookAt(orbit.target);
    camera.updateProjectionMatrix();
  }

  // ---- obstacles -----------------------------------------------------------------------------
  const obstacleMaterial = new THREE.MeshStandardMaterial({ color: 0x9a9a9a, roughness: 0.8, side: THREE.DoubleSide,
                                                            transparent: true, opacity: 0.55, depthWrite: false });
  const Y = new THREE.Vector3(0, 1, 0), Z = new THREE.Vector3(0, 0, 1);
  function orient(mesh, from, to) { mesh.quaternion.setFromUnitVectors(from, to.clone().normalize()); }
  for (const ob of data.obstacles) {
    let mesh;
    if (ob.kind === "plane") {
      const n = new THREE.Vector3().fromArray(ob.normal).normalize();
      const p = new THREE.Vector3().fromArray(ob.point);
      mesh = new THREE.Mesh(new THREE.PlaneGeometry(3 * size, 3 * size), obstacleMaterial);
      orient(mesh, Z, n);
      mesh.position.copy(center.clone().sub(n.clone().multiplyScalar(center.clone().sub(p).dot(n))));
    } else if (ob.kind === "sphere") {
      mesh = new THREE.Mesh(new THREE.SphereGeometry(ob.radius, 48, 24), obstacleMaterial);
      mesh.position.fromArray(ob.center);
    } else if (ob.kind === "capsule") {
      const a = new THREE.Vector3().fromArray(ob.a), b = new THREE.Vector3().fromArray(ob.b);
      const axis = b.clone().sub(a);
      mesh = new THREE.Mesh(new THREE.CapsuleGeometry(ob.radius, axis.length(), 8, 32), obstacleMaterial);
      if (axis.length() > 0) orient(mesh, Y, axis);
      mesh.position.copy(a.add(b).multiplyScalar(0.5));
    } else if (ob.kind === "cylinder") {
      const axis = new THREE.Vector3().fromArray(ob.axis).normalize();
      const p = new THREE.Vector3().fromArray(ob.point);
      mesh = new THREE.Mesh(new THREE.CylinderGeometry(ob.radius, ob.radius, 3 * size, 48, 1, true), obstacleMaterial);
      orient(mesh, Y, axis);
      mesh.position.copy(p.add(axis.multiplyScalar(center.clone().sub(p).dot(axis))));
    } else if (ob.kind === "mesh") {
      const g = new THREE.BufferGeometry();
      g.setAttribute("position", new THREE.Float32BufferAttribute(ob.vertices, 3));
      g.setIndex(ob.triangles);
      g.computeVertexNormals();
      mesh = new THREE.Mesh(g, obstacleMaterial);
    }
    if (mesh) scene.add(mesh);
  }

  // ---- rigid bodies: boxes of their mass and inertia, placed per frame where the run records it -----
  const BX = data.body_x_b64 ? floats(data.body_x_b64) : null;  // (F, B, 3) centres [m]
  const BQ = data.body_q_b64 ? floats(data.body_q_b64) : null;  // (F, B, 4) orientations (w, x, y, z)
  const bodyMaterial = new THREE.MeshStandardMaterial({ color: 0xb08d57, roughness: 0.6 });
  const bodies = data.bodies.map((b) => {
    const mesh = new THREE.Mesh(new THREE.BoxGeometry(2 * b.half[0], 2 * b.half[1], 2 * b.half[2]), bodyMaterial);
    const a = b.axes;                          // box axes (columns) in body coordinates, row-major
    const axes = new THREE.Matrix4().set(a[0], a[1], a[2], 0, a[3], a[4], a[5], 0, a[6], a[7], a[8], 0, 0, 0, 0, 1);
    mesh.matrixAutoUpdate = false;
    scene.add(mesh);
    return { mesh: mesh, axes: axes, x0: b.x0, q0: b.q0 };
  });
  function placeBodies(k) {
    const nb = bodies.length;
    bodies.forEach((b, i) => {
      const x = BX ? [BX[(k * nb + i) * 3], BX[(k * nb + i) * 3 + 1], BX[(k * nb + i) * 3 + 2]] : b.x0;
      const q = BQ ? [BQ[(k * nb + i) * 4], BQ[(k * nb + i) * 4 + 1], BQ[(k * nb + i) * 4 + 2], BQ[(k * nb + i) * 4 + 3]] : b.q0;
      const rot = new THREE.Matrix4().makeRotationFromQuaternion(new THREE.Quaternion(q[1], q[2], q[3], q[0]).normalize());
      b.mesh.matrix.copy(rot.multiply(b.axes)).setPosition(x[0], x[1], x[2]);
      b.mesh.matrixWorldNeedsUpdate = true;
    });
  }

  // ---- tubes: every rod in one mesh (one draw call), coloured per rod --------------------------
  const tubes = [];
  let nIndex = 0;
  for (let r = 0; r < nRods; r++) {
    const nv = offsets[r + 1] - offsets[r], closed = !!data.rod_closed[r];
    tubes.push({ a: offsets[r], nv: nv, closed: closed });
    nIndex += (closed ? nv : nv - 1) * SIDES * 6;
  }
  const index = N * SIDES > 65535 ? new Uint32Array(nIndex) : new Uint16Array(nIndex);
  const color = new Float32Array(N * SIDES * 3);
  let w = 0;
  for (let r = 0; r < nRods; r++) {
    const tube = tubes[r], first = tube.a * SIDES, segs = tube.closed ? tube.nv : tube.nv - 1;
    for (let i = 0; i < segs; i++) {
      const i2 = (i + 1) % tube.nv;
      for (let j = 0; j < SIDES; j++) {
        const j2 = (j + 1) % SIDES;
        const p = first + i * SIDES + j, q = first + i * SIDES + j2, s = first + i2 * SIDES + j, u = first + i2 * SIDES + j2;
        index[w++] = p; index[w++] = s; index[w++] = q; index[w++] = q; index[w++] = s; index[w++] = u;
      }
    }
    const c = new THREE.Color(PALETTE[r % PALETTE.length]);
    const stripe = c.clone().lerp(new THREE.Color(0xffffff), 0.75);  // ring point 0: along d1
    for (let o = first; o < first + tube.nv * SIDES; o++) {
      const k = (o - first) % SIDES === 0 ? stripe : c;
      color[3 * o] = k.r; color[3 * o + 1] = k.g; color[3 * o + 2] = k.b;
    }
  }
  const tubeGeometry = new THREE.BufferGeometry();
  tubeGeometry.setAttribute("position", new THREE.BufferAttribute(new Float32Array(N * SIDES * 3), 3));
  tubeGeometry.setAttribute("normal", new THREE.BufferAttribute(new Float32Array(N * SIDES * 3), 3));
  tubeGeometry.setAttribute("color", new THREE.BufferAttribute(color, 3));
  tubeGeometry.setIndex(new THREE.BufferAttribute(index, 1));
  const tubeMesh = new THREE.Mesh(tubeGeometry, new THREE.MeshStandardMaterial({ vertexColors: true, roughness: 0.45,
                                                                                  metalness: 0.0, side: THREE.DoubleSide }));
  tubeMesh.frustumCulled = false;
  scene.add(tubeMesh);

  const cosj = new Float32Array(SIDES), sinj = new Float32Array(SIDES);
  for (let j = 0; j < SIDES; j++) { cosj[j] = Math.cos(2 * Math.PI * j / SIDES); sinj[j] = Math.sin(2 * Math.PI * j / SIDES); }

  function updateTube(tube, k) {
    // Rings around each vertex, oriented by its tangent (mean of its edges' directions) and a
    // normal: the recorded material director d1 projected off the tangent (M1), else carried along
    // the rod by parallel transport (projection onto the next ring's plane). Ring point 0, the
    // stripe, lies along that normal.
    const pos = tubeGeometry.attributes.position.array, nor = tubeGeometry.attributes.normal.array;
    const base = (k * N + tube.a) * 3, nv = tube.nv;
    const P = (i, c) => X[base + 3 * i + c];
    let nx = 0, ny = 0, nz = 0;
    for (let i = 0; i < nv; i++) {
      let tx = 0, ty = 0, tz = 0;
      const prev = i > 0 ? i - 1 : (tube.closed ? nv - 1 : -1);
      const next = i < nv - 1 ? i + 1 : (tube.closed ? 0 : -1);
      for (let side = 0; side < 2; side++) {    // the unit directions of the edges before and after i
        const u = side ? i : prev, v = side ? next : i;
        if (u < 0 || v < 0) continue;
        const ex = P(v, 0) - P(u, 0), ey = P(v, 1) - P(u, 1), ez = P(v, 2) - P(u, 2);
        const l = Math.sqrt(ex * ex + ey * ey + ez * ez);
        if (l > 0) { tx += ex / l; ty += ey / l; tz += ez / l; }
      }
      let lt = Math.sqrt(tx * tx + ty * ty + tz * tz);
      if (lt === 0) { tx = 1; ty = 0; tz = 0; lt = 1; }
      tx /= lt; ty /= lt; tz /= lt;
      if (M1) {                          // the material director of this vertex
        const m = (k * N + tube.a + i) * 3;
        nx = M1[m]; ny = M1[m + 1]; nz = M1[m + 2];
      }
      let d = nx * tx + ny * ty + nz * tz;
      let mx = nx - d * tx, my = ny - d * ty, mz = nz - d * tz;
      let lm = Math.sqrt(mx * mx + my * my + mz * mz);
      if (lm < 1e-6) {                   // first ring, or the carried normal fell onto the tangent
        const ax = Math.abs(tx) < 0.9 ? 1 : 0, ay = ax ? 0 : 1;
        d = ax * tx + ay * ty;
        mx = ax - d * tx; my = ay - d * ty; mz = -d * tz;
        lm = Math.sqrt(mx * mx + my * my + mz * mz);
      }
      nx = mx / lm; ny = my / lm; nz = mz / lm;
      const bx = ty * nz - tz * ny, by = tz * nx - tx * nz, bz = tx * ny - ty * nx;
      const rad = RADIUS[tube.a + i];
      for (let j = 0; j < SIDES; j++) {
        const ox = cosj[j] * nx + sinj[j] * bx, oy = cosj[j] * ny + sinj[j] * by, oz = cosj[j] * nz + sinj[j] * bz;
        const o = 3 * ((tube.a + i) * SIDES + j);
        pos[o] = P(i, 0) + rad * ox; pos[o + 1] = P(i, 1) + rad * oy; pos[o + 2] = P(i, 2) + rad * oz;
        nor[o] = ox; nor[o + 1] = oy; nor[o + 2] = oz;
      }
    }
  }

  // ---- UI ------------------------------------------------------------------------------------
  const slider = document.getElementById("slider");
  const playButton = document.getElementById("play");
  const counter = document.getElementById("counter");
  slider.max = String(F - 1);
  document.getElementById("scene").textContent = data.scene + (data.method ? " (" + data.method + ")" : "");
  const notes = document.getElementById("notes");
  for (const text of data.notes) {
    const li = document.createElement("li");
    li.textContent = text;
    notes.appendChild(li);
  }
  function show(v) {
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toPrecision(6);
    if (v === null) return "null";
    const s = typeof v === "string" ? v : JSON.stringify(v);
    return s.length > 120 ? s.slice(0, 117) + "..." : s;
  }
  const tbody = document.querySelector("#metrics tbody");
  for (const [key, value] of Object.entries(data.metrics)) {
    const tr = document.createElement("tr");
    const a = document.createElement("td"), b = document.createElement("td");
    a.textContent = key;
    b.textContent = show(value);
    tr.append(a, b);
    tbody.appendChild(tr);
  }

  let frame = 0, playing = false, lastTick = 0;
  function render() { renderer.render(scene, camera); }
  function setFrame(k) {
    k = Math.max(0, Math.min(F - 1, Math.round(Number(k)) || 0));
    frame = k;
    for (const tube of tubes) updateTube(tube, k);
    placeBodies(k);
    tubeGeometry.attributes.position.needsUpdate = true;
    tubeGeometry.attributes.normal.needsUpdate = true;
    slider.value = String(k);
    counter.textContent = "frame " + k + " / " + (F - 1) + " (run frame " + data.frame_index[k] + " of " +
      data.n_frames_run + "),  t = " + data.t[k].toPrecision(6) + " s";
    render();
  }
  function setPlaying(on) {
    playing = on && F > 1;
    playButton.textContent = playing ? "Pause" : "Play";
  }
  slider.addEventListener("input", () => { setPlaying(false); setFrame(slider.value); });
  playButton.addEventListener("click", () => setPlaying(!playing));
  window.addEventListener("keydown", (e) => {
    if (e.target === slider) return;
    if (e.code === "Space") { setPlaying(!playing); e.preventDefault(); }
    if (e.code === "ArrowRight") { setPlaying(false); setFrame(frame + 1); }
    if (e.code === "ArrowLeft") { setPlaying(false); setFrame(frame - 1); }
  });
  function tick(now) {
    if (playing && now - lastTick > 1000 / 30) {   // 30 frames per second, looping
      lastTick = now;
      setFrame((frame + 1) % F);
    }
    requestAnimationFrame(tick);
  }

  // mouse: drag rotates about the target, shift + drag (or right drag) pans, the wheel zooms
  let drag = null;
  const canvas = renderer.domElement;
  canvas.addEventListener("contextmenu", (e) => e.preventDefault());
  canvas.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX, y: e.clientY, pan: e.shiftKey || e.button === 2 };
    canvas.setPointerCapture(e.pointerId);
  });
  canvas.addEventListener("pointerup", () => { drag = null; });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    drag.x = e.clientX; drag.y = e.clientY;
    if (drag.pan) {
      const s = orbit.distance * 2 * Math.tan(THREE.MathUtils.degToRad(camera.fov) / 2) / Math.max(canvas.clientHeight, 1);
      const right = new THREE.Vector3().setFromMatrixColumn(camera.matrix, 0);
      const up = new THREE.Vector3().setFromMatrixColumn(camera.matrix, 1);
      orbit.target.addScaledVector(right, -dx * s).addScaledVector(up, dy * s);
    } else {
      orbit.azimuth -= dx * 0.008;
      orbit.elevation = Math.max(-1.55, Math.min(1.55, orbit.elevation + dy * 0.008));
    }
    placeCamera();
    render();
  });
  canvas.addEventListener("wheel", (e) => {
    orbit.distance *= Math.exp(e.deltaY * 0.001);
    placeCamera();
    render();
    e.preventDefault();
  }, { passive: false });

  function resize() {
    const w = Math.max(view.clientWidth, 1), h = Math.max(view.clientHeight, 1);
    renderer.setSize(w, h);
    camera.aspect = w / h;
    placeCamera();
    render();
  }
  window.addEventListener("resize", resize);

  window.rodlabViewer = {
    nFrames: F, nVertices: N, nRods: nRods, sides: SIDES, stripe: M1 ? "material" : "transported",
    nBodies: bodies.length,
    // ring point 0 of vertex i in the current frame minus the vertex, divided by the radius: the
    // stripe's direction (for scripts and tests)
    stripeDirection: (i) => {
      const pos = tubeGeometry.attributes.position.array, o = 3 * i * SIDES, r = RADIUS[i], b = (frame * N + i) * 3;
      return [(pos[o] - X[b]) / r, (pos[o + 1] - X[b + 1]) / r, (pos[o + 2] - X[b + 2]) / r];
    },
    frame: () => frame, setFrame: setFrame, playing: () => playing, setPlaying: setPlaying,
    time: () => data.t[frame], ready: false,
    // milliseconds to rebuild the tubes of frame k without drawing them (for cost measurements)
    updateMs: (k) => {
      const t0 = performance.now();
      for (const tube of tubes) updateTube(tube, k);
      const ms = performance.now() - t0;
      setFrame(k);
      return ms;
    },
    // the current frame's vertices in CSS pixels of the page [[x, y], ...] (for scripts and tests)
    screenPoints: () => {
      const rect = canvas.getBoundingClientRect(), out = [], v = new THREE.Vector3();
      camera.updateMatrixWorld();
      for (let i = 0; i < N; i++) {
        v.set(X[(frame * N + i) * 3], X[(frame * N + i) * 3 + 1], X[(frame * N + i) * 3 + 2]).project(camera);
        out.push([rect.left + (v.x + 1) / 2 * rect.width, rect.top + (1 - v.y) / 2 * rect.height]);
      }
      return out;
    },
  };
  resize();
  setFrame(0);
  window.rodlabViewer.ready = true;
  requestAnimationFrame(tick);
})();
