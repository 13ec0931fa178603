//! Kernels launched through CUDA graphs (`cudaGraphLaunch`, and kernels launched on a stream
//! while it was being captured into a graph). A graph launch runs its nodes inside the
//! driver, where no launch callback sees them. So when an instantiated graph is launched and
//! one of its kernels is still within its first K launches, the injection library runs the
//! graph's nodes itself first, one at a time in dependency order: each kernel node is
//! captured like a plain launch ([`super::inject::enter`]), memsets and copies run as the
//! graph would run them. Then it puts back every byte those nodes could have written (each
//! allocation a kernel parameter word points into, the globals asked for, each memset's and
//! device copy's destination) and lets the graph launch run as the program asked, so the
//! program computes what it would have computed.
//!
//! The graph is cloned when it is instantiated (programs often destroy it right after); an
//! executable graph updated from another graph (`cudaGraphExecUpdate`) is cloned again (a
//! refused update is not performed, and changes nothing), a kernel, memset or copy node
//! changed after instantiation (`cudaGraphExec*SetParams`) is changed the same way in the
//! clone, and a node disabled in it (`cudaGraphNodeSetEnabled`) is passed over, as the graph
//! launch passes it over. A graph changed otherwise (a host or child-graph node's
//! parameters) is not run: its kernels are named skips. A child graph node
//! runs as its own graph's nodes, in their dependency order, where the node stands. Nodes
//! not run: host nodes (a host callback must not run twice), conditional nodes (their
//! handle's value is set on the device), memory allocation and free nodes, copies into CUDA
//! arrays, and kinds this file does not know; the kernel nodes from the first such node on
//! (in the order used) are named skips; a kernel only inside a conditional body is never a
//! node here, and is written down as a skip when the program exits
//! ([`super::inject::write_counts`]). Event nodes only order
//! work and are passed over.

use super::inject::{
    allocation_of, capturing, enter, exit, module_globals, param_bytes, pointer_words, sync,
    Config, Launch, CONFIG, STATE,
};
use super::manifest::AllocKind;
use cudarc::cupti::sys as cupti;
use cudarc::driver::sys as cu;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

type Cbid = cupti::CUpti_driver_api_trace_cbid_enum;

/// The graph entry points whose callbacks are enabled.
pub(super) const GRAPH_CALLS: [Cbid; 19] = [
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecHostNodeSetParams,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphExecEventRecordNodeSetEvent,
];

/// What the library knows of one executable graph.
struct ExecGraph {
    /// A clone of the graph it was instantiated (or last updated) from.
    graph: usize,
    /// Why its nodes no longer match that graph, when the program changed them.
    changed: Option<&'static str>,
    /// The clone's nodes the program disabled in the executable graph
    /// (`cudaGraphNodeSetEnabled`): the graph launch skips them, and so does this file.
    disabled: std::collections::HashSet<usize>,
}

/// Executable graphs instantiated while the library ran, by handle.
static GRAPHS: Mutex<Option<HashMap<usize, ExecGraph>>> = Mutex::new(None);

/// `f` on the map of executable graphs (`None` once a panic poisoned it).
fn graphs<T>(f: impl FnOnce(&mut HashMap<usize, ExecGraph>) -> T) -> Option<T> {
    GRAPHS
        .lock()
        .ok()
        .map(|mut g| f(g.get_or_insert_with(HashMap::new)))
}

/// Correlation ids for the launches this file makes itself, counting down from the top so
/// they never meet CUPTI's.
static OWN_CORRELATION: AtomicU32 = AtomicU32::new(u32::MAX);

/// A graph callback: `true` when `cbid` is one of [`GRAPH_CALLS`] (handled here).
///
/// # Safety
/// `data` must be the callback data CUPTI gives for driver-API callback `cbid`.
pub(super) unsafe fn on_callback(cbid: u32, data: &cupti::CUpti_CallbackData) -> bool {
    let Some(&call) = GRAPH_CALLS.iter().find(|c| **c as u32 == cbid) else {
        return false;
    };
    let p = data.functionParams;
    if p.is_null() {
        return true;
    }
    let entering = data.callbackSite == cupti::CUpti_ApiCallbackSite::CUPTI_API_ENTER;
    let succeeded = || {
        // SAFETY: at exit the return value points to the call's CUresult.
        !data.functionReturnValue.is_null()
            && unsafe { *(data.functionReturnValue as *const cu::CUresult) }
                == cu::CUresult::CUDA_SUCCESS
    };
    use Cbid as C;
    match call {
        C::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch
        | C::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz => {
            if entering {
                // SAFETY: both entry points take (hGraphExec, hStream).
                let a = unsafe { &*(p as *const cupti::cuGraphLaunch_params) };
                launched(a.hGraph as usize, a.hStream);
            }
        }
        C::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate
        | C::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2
        | C::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags
        | C::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams
        | C::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz => {
            if !entering && succeeded() {
                // SAFETY: every instantiate entry point starts with (phGraphExec, hGraph).
                let a = unsafe { &*(p as *const cupti::cuGraphInstantiateWithFlags_params) };
                if !a.phGraphExec.is_null() {
                    // SAFETY: the call succeeded, so it wrote the executable graph.
                    let exec = unsafe { *a.phGraphExec } as usize;
                    remember(exec, a.hGraph);
                }
            }
        }
        C::CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy => {
            if entering {
                // SAFETY: the parameter struct of cuGraphExecDestroy.
                let a = unsafe { &*(p as *const cupti::cuGraphExecDestroy_params) };
                forget(a.hGraphExec as usize);
            }
        }
        C::CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate
        | C::CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2 => {
            // A refused update is not performed (cudaErrorGraphExecUpdateFailure: "the graph
            // update was not performed"): the clone still stands for the executable graph.
            if !entering && succeeded() {
                // SAFETY: both versions start with (hGraphExec, hGraph).
                let a = unsafe { &*(p as *const cupti::cuGraphExecUpdate_v2_params) };
                remember(a.hGraphExec as usize, a.hGraph);
            }
        }
        C::CUPTI_DRIVER_TRACE_CBID_cuGraphExecEventRecordNodeSetEvent => {}
        C::CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled => {
            if !entering && succeeded() {
                // SAFETY: the parameter struct of cuGraphNodeSetEnabled.
                let a = unsafe { &*(p as *const cupti::cuGraphNodeSetEnabled_params) };
                let exec = a.hGraphExec as usize;
                if set_enabled(exec, a.hNode, a.isEnabled != 0).is_err() {
                    mark_changed(exec, "changed node by node after it was instantiated");
                }
            }
        }
        _ => {
            if !entering && succeeded() {
                // SAFETY: every other call listed takes (hGraphExec, hNode, parameters).
                let a = unsafe { &*(p as *const NodeSetParams) };
                if let Err(why) = follow(call, a) {
                    mark_changed(a.exec as usize, why);
                }
            }
        }
    }
    true
}

/// The first three parameters of the `cuGraphExec*SetParams` calls.
#[repr(C)]
struct NodeSetParams {
    exec: cu::CUgraphExec,
    node: cu::CUgraphNode,
    params: *const c_void,
}

/// Make the same change to the clone that stands for the executable graph (jacobiCudaGraphs
/// swaps its kernel node's two grids before every launch). `Err`: the change is not
/// followed, so the graph's kernels become named skips.
fn follow(call: Cbid, a: &NodeSetParams) -> Result<(), &'static str> {
    const NOT_FOLLOWED: &str = "changed node by node after it was instantiated";
    let node = clone_node(a.exec as usize, a.node).ok_or(NOT_FOLLOWED)?;
    use Cbid as C;
    // SAFETY: each setter takes the parameter struct the program passed to the matching
    // exec setter (the unversioned kernel entry point's v1 struct copied into a v2), still valid
    // during the callback.
    let rc = unsafe {
        match call {
            C::CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams => {
                let v1 = &*(a.params as *const cu::CUDA_KERNEL_NODE_PARAMS_v1);
                let v2 = cu::CUDA_KERNEL_NODE_PARAMS {
                    func: v1.func,
                    gridDimX: v1.gridDimX,
                    gridDimY: v1.gridDimY,
                    gridDimZ: v1.gridDimZ,
                    blockDimX: v1.blockDimX,
                    blockDimY: v1.blockDimY,
                    blockDimZ: v1.blockDimZ,
                    sharedMemBytes: v1.sharedMemBytes,
                    kernelParams: v1.kernelParams,
                    extra: v1.extra,
                    kern: std::ptr::null_mut(),
                    ctx: std::ptr::null_mut(),
                };
                cu::cuGraphKernelNodeSetParams_v2(node, &v2)
            }
            C::CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2 => {
                cu::cuGraphKernelNodeSetParams_v2(node, a.params.cast())
            }
            C::CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams => {
                cu::cuGraphMemcpyNodeSetParams(node, a.params.cast())
            }
            C::CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams => {
                cu::cuGraphMemsetNodeSetParams(node, a.params.cast())
            }
            C::CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams => {
                cu::cuGraphNodeSetParams(node, a.params as *mut cu::CUgraphNodeParams)
            }
            _ => return Err(NOT_FOLLOWED),
        }
    };
    (rc == cu::CUresult::CUDA_SUCCESS)
        .then_some(())
        .ok_or(NOT_FOLLOWED)
}

/// The node of the clone standing for `exec` that stands for `node` (a node of the graph the
/// executable graph was made from).
fn clone_node(exec: usize, node: cu::CUgraphNode) -> Option<cu::CUgraphNode> {
    let graph = graphs(|g| g.get(&exec).map(|e| e.graph)).flatten()?;
    let mut found: cu::CUgraphNode = std::ptr::null_mut();
    // SAFETY: `node` is a node of the graph the clone was made from; out-pointer valid.
    let rc = unsafe { cu::cuGraphNodeFindInClone(&mut found, node, graph as cu::CUgraph) };
    (rc == cu::CUresult::CUDA_SUCCESS && !found.is_null()).then_some(found)
}

/// `cudaGraphNodeSetEnabled`: the clone's node is skipped (or run again) as the executable
/// graph's is.
fn set_enabled(exec: usize, node: cu::CUgraphNode, enabled: bool) -> Result<(), ()> {
    let found = clone_node(exec, node).ok_or(())? as usize;
    graphs(|g| {
        g.get_mut(&exec).map(|e| match enabled {
            true => e.disabled.remove(&found),
            false => e.disabled.insert(found),
        })
    })
    .flatten()
    .map(|_| ())
    .ok_or(())
}

/// A clone of `graph` stands for executable graph `exec` from now on.
fn remember(exec: usize, graph: cu::CUgraph) {
    let mut clone: cu::CUgraph = std::ptr::null_mut();
    // SAFETY: `graph` is the live graph the call just instantiated from; out-pointer valid.
    let cloned = unsafe { cu::cuGraphClone(&mut clone, graph) } == cu::CUresult::CUDA_SUCCESS;
    let entry = ExecGraph {
        graph: clone as usize,
        changed: (!cloned).then_some("its graph could not be cloned"),
        disabled: Default::default(),
    };
    if let Some(o) = graphs(|g| g.insert(exec, entry)).flatten() {
        destroy(o.graph);
    }
}

fn forget(exec: usize) {
    if let Some(o) = graphs(|g| g.remove(&exec)).flatten() {
        destroy(o.graph);
    }
}

fn destroy(graph: usize) {
    if graph != 0 {
        // SAFETY: a clone this file made and no longer refers to.
        unsafe { cu::cuGraphDestroy(graph as cu::CUgraph) };
    }
}

fn mark_changed(exec: usize, why: &'static str) {
    graphs(|g| {
        if let Some(e) = g.get_mut(&exec) {
            e.changed = Some(why);
        }
    });
}

/// One node of a graph, as this file runs it.
enum Step {
    Kernel(Launch),
    Memset(cu::CUDA_MEMSET_NODE_PARAMS),
    Memcpy(Box<cu::CUDA_MEMCPY3D>),
    /// Nothing to run (an empty node, an event record or wait).
    Pass,
    /// A node not run: why, in words ("a host node").
    Stop(String),
}

/// `nodes` (by index) in an order that puts every node after the nodes it depends on
/// (`edges`: (from, to) index pairs); ties keep the given order. `None` on a cycle.
pub(super) fn dependency_order(nodes: usize, edges: &[(usize, usize)]) -> Option<Vec<usize>> {
    let mut waiting = vec![0usize; nodes];
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for &(a, b) in edges {
        waiting[b] += 1;
        next[a].push(b);
    }
    let mut ready: std::collections::BTreeSet<usize> =
        (0..nodes).filter(|&n| waiting[n] == 0).collect();
    let mut out = Vec::with_capacity(nodes);
    while let Some(n) = ready.pop_first() {
        out.push(n);
        for &m in &next[n] {
            waiting[m] -= 1;
            if waiting[m] == 0 {
                ready.insert(m);
            }
        }
    }
    (out.len() == nodes).then_some(out)
}

fn check(rc: cu::CUresult, what: &str) -> Result<(), String> {
    match rc {
        cu::CUresult::CUDA_SUCCESS => Ok(()),
        e => Err(format!("{what} failed: {e:?}")),
    }
}

/// The graph's nodes in dependency order.
fn nodes_in_order(g: cu::CUgraph) -> Result<Vec<cu::CUgraphNode>, String> {
    let mut n = 0usize;
    // SAFETY: a live graph (our clone); a null array asks for the count.
    check(
        unsafe { cu::cuGraphGetNodes(g, std::ptr::null_mut(), &mut n) },
        "cuGraphGetNodes",
    )?;
    let mut nodes: Vec<cu::CUgraphNode> = vec![std::ptr::null_mut(); n];
    // SAFETY: `nodes` holds `n` entries.
    check(
        unsafe { cu::cuGraphGetNodes(g, nodes.as_mut_ptr(), &mut n) },
        "cuGraphGetNodes",
    )?;
    nodes.truncate(n);
    let mut e = 0usize;
    let null = std::ptr::null_mut();
    // SAFETY: as above, for the edges; edge data is optional.
    check(
        unsafe { cu::cuGraphGetEdges_v2(g, null, null, std::ptr::null_mut(), &mut e) },
        "cuGraphGetEdges",
    )?;
    if e == 0 {
        // No edges (a one-node child graph): the driver refuses arrays for zero entries.
        return dependency_order(nodes.len(), &[])
            .map(|order| order.into_iter().map(|i| nodes[i]).collect())
            .ok_or_else(|| "the graph has a cycle".to_string());
    }
    let mut from: Vec<cu::CUgraphNode> = vec![std::ptr::null_mut(); e];
    let mut to = from.clone();
    // Asked for too: without it, edges that carry data (a conditional node's, programmatic
    // launch ports) make the query fail as lossy.
    let mut data = vec![
        cu::CUgraphEdgeData {
            from_port: 0,
            to_port: 0,
            type_: 0,
            reserved: [0; 5],
        };
        e
    ];
    // SAFETY: the three arrays hold `e` entries.
    check(
        unsafe {
            cu::cuGraphGetEdges_v2(
                g,
                from.as_mut_ptr(),
                to.as_mut_ptr(),
                data.as_mut_ptr(),
                &mut e,
            )
        },
        "cuGraphGetEdges",
    )?;
    let index = |x: cu::CUgraphNode| nodes.iter().position(|&y| y == x);
    let edges: Vec<(usize, usize)> = from
        .iter()
        .zip(&to)
        .take(e)
        .filter_map(|(&a, &b)| Some((index(a)?, index(b)?)))
        .collect();
    let order = dependency_order(nodes.len(), &edges).ok_or("the graph has a cycle")?;
    Ok(order.into_iter().map(|i| nodes[i]).collect())
}

/// How deep child graphs are followed (a child graph holding a child graph, …).
const CHILD_DEPTH: usize = 8;

/// The steps of `g` in dependency order, each child graph node replaced by its own graph's
/// steps (in their dependency order, so everything the child node waited for comes before
/// them and everything that waits for it after).
fn steps_of(
    g: cu::CUgraph,
    stream: cu::CUstream,
    depth: usize,
    disabled: &std::collections::HashSet<usize>,
) -> Result<Vec<Step>, String> {
    let mut out = Vec::new();
    for node in nodes_in_order(g)? {
        if disabled.contains(&(node as usize)) {
            // Disabled in the executable graph: the launch does not run it.
            out.push(Step::Pass);
            continue;
        }
        match child_graph(node) {
            Some(child) if depth < CHILD_DEPTH => {
                out.extend(steps_of(child, stream, depth + 1, disabled)?)
            }
            Some(_) => out.push(Step::Stop(format!(
                "child graphs nested more than {CHILD_DEPTH} deep"
            ))),
            None => out.push(step_of(node, stream)),
        }
    }
    Ok(out)
}

/// The graph a child graph node holds (owned by the node; `None` for other nodes).
fn child_graph(node: cu::CUgraphNode) -> Option<cu::CUgraph> {
    let mut t: u32 = u32::MAX;
    // SAFETY: as in `step_of`: the type read as its 32-bit number.
    let rc =
        unsafe { cu::cuGraphNodeGetType(node, &mut t as *mut u32 as *mut cu::CUgraphNodeType) };
    if rc != cu::CUresult::CUDA_SUCCESS || t != 4 {
        return None;
    }
    let mut child: cu::CUgraph = std::ptr::null_mut();
    // SAFETY: a child graph node of a live graph; the out-pointer is valid.
    let rc = unsafe { cu::cuGraphChildGraphNodeGetGraph(node, &mut child) };
    (rc == cu::CUresult::CUDA_SUCCESS && !child.is_null()).then_some(child)
}

fn step_of(node: cu::CUgraphNode, stream: cu::CUstream) -> Step {
    let mut t: u32 = u32::MAX;
    // SAFETY: the node type is a C enum written as 32 bits; reading it as u32 keeps a kind
    // newer than these bindings from being an invalid Rust enum.
    let rc =
        unsafe { cu::cuGraphNodeGetType(node, &mut t as *mut u32 as *mut cu::CUgraphNodeType) };
    if rc != cu::CUresult::CUDA_SUCCESS {
        return Step::Stop(format!("a node whose kind could not be read ({rc:?})"));
    }
    match t {
        0 => {
            // SAFETY: all-zero is a valid CUDA_KERNEL_NODE_PARAMS (null handles).
            let mut k: cu::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
            // SAFETY: a kernel node of a live graph; `k` is the v2 struct this entry point
            // fills.
            if unsafe { cu::cuGraphKernelNodeGetParams_v2(node, &mut k) }
                != cu::CUresult::CUDA_SUCCESS
            {
                return Step::Stop("a kernel node whose parameters could not be read".into());
            }
            let f = match k.func.is_null() {
                true => k.kern as cu::CUfunction,
                false => k.func,
            };
            let mut v = std::mem::MaybeUninit::<cu::CUkernelNodeAttrValue>::zeroed();
            // SAFETY: a kernel node; on success the driver wrote the attribute's value, whose
            // `cooperative` member is a plain int.
            let cooperative = unsafe {
                cu::cuGraphKernelNodeGetAttribute(
                    node,
                    cu::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
                    v.as_mut_ptr(),
                ) == cu::CUresult::CUDA_SUCCESS
                    && v.assume_init_ref().cooperative != 0
            };
            Step::Kernel(Launch {
                f,
                grid: [k.gridDimX, k.gridDimY, k.gridDimZ],
                block: [k.blockDimX, k.blockDimY, k.blockDimZ],
                shared_mem: k.sharedMemBytes,
                stream,
                params: k.kernelParams,
                extra: k.extra,
                via: "cuGraphLaunch",
                cooperative,
            })
        }
        1 => {
            // All-zero is not a valid CUDA_MEMCPY3D in Rust (its memory-type enums start at
            // 1): the driver fills it.
            let mut c = Box::new(std::mem::MaybeUninit::<cu::CUDA_MEMCPY3D>::zeroed());
            // SAFETY: a memcpy node of a live graph; the struct is written on success.
            if unsafe { cu::cuGraphMemcpyNodeGetParams(node, c.as_mut_ptr()) }
                != cu::CUresult::CUDA_SUCCESS
            {
                return Step::Stop("a copy node whose parameters could not be read".into());
            }
            // SAFETY: written by the driver just above.
            let c: Box<cu::CUDA_MEMCPY3D> = unsafe { Box::from_raw(Box::into_raw(c).cast()) };
            match memory_type(&c.dstMemoryType) {
                3 => Step::Stop("a copy into a CUDA array".into()),
                _ => Step::Memcpy(c),
            }
        }
        2 => {
            // SAFETY: all-zero is a valid CUDA_MEMSET_NODE_PARAMS.
            let mut m: cu::CUDA_MEMSET_NODE_PARAMS = unsafe { std::mem::zeroed() };
            // SAFETY: a memset node of a live graph.
            if unsafe { cu::cuGraphMemsetNodeGetParams(node, &mut m) } != cu::CUresult::CUDA_SUCCESS
            {
                return Step::Stop("a memset node whose parameters could not be read".into());
            }
            Step::Memset(m)
        }
        3 => Step::Stop("a host node (a host callback must not run twice)".into()),
        4 => Step::Stop("a child graph node whose graph could not be read".into()),
        5..=7 => Step::Pass,
        10 | 11 => Step::Stop("a memory allocation or free node".into()),
        13 => Step::Stop("a conditional node (its bodies are graphs of their own)".into()),
        other => Step::Stop(format!("a node of kind {other}")),
    }
}

/// A `CUmemorytype` field read as its number (1 host, 2 device, 3 array, 4 unified).
fn memory_type(t: &cu::CUmemorytype) -> u32 {
    // SAFETY: the field is a 32-bit C enum the driver wrote.
    unsafe { *(t as *const cu::CUmemorytype as *const u32) }
}

/// An executable graph is being launched on `stream`: capture its kernels that are still
/// within their first K launches, as described at the top of this file.
fn launched(exec: usize, stream: cu::CUstream) {
    let Some(cfg) = CONFIG.get() else { return };
    // Launched into another stream capture: it becomes a node of that graph, not a run.
    if capturing(stream) {
        return;
    }
    let found = graphs(|g| {
        g.get(&exec)
            .map(|e| (e.graph, e.changed, e.disabled.clone()))
    })
    .flatten();
    // An executable graph made before the library started, or never seen: not ours to run.
    let Some((graph, changed, disabled)) = found else {
        return;
    };
    let steps: Vec<Step> = match steps_of(graph as cu::CUgraph, stream, 0, &disabled) {
        Ok(steps) => steps,
        Err(e) => {
            eprintln!("kernelpair capture: a graph launch was not captured: {e}");
            return;
        }
    };
    let wanted = STATE.lock().ok().is_some_and(|mut g| {
        g.as_mut()
            .is_some_and(|s| kernels(&steps).any(|l| s.would_capture(l.f, cfg.first)))
    });
    if !wanted {
        // Only counted (and the quiet rule applied), as plain launches past K are.
        not_run(&steps, None);
        return;
    }
    if let Some(why) = changed {
        not_run(&steps, Some(&format!("launched by a CUDA graph {why}")));
        return;
    }
    let stop = steps.iter().position(|s| matches!(s, Step::Stop(_)));
    let (run, rest) = steps.split_at(stop.unwrap_or(steps.len()));
    let saved = match sync("before the graph's nodes").and_then(|()| save(cfg, run)) {
        Ok(s) => s,
        Err(e) => {
            not_run(&steps, Some(&format!("launched by a CUDA graph: {e}")));
            return;
        }
    };
    for step in run {
        let rc = match step {
            Step::Kernel(l) => {
                let c = OWN_CORRELATION.fetch_sub(1, Ordering::Relaxed);
                enter(l, c, None);
                let rc = launch(l);
                exit(c, rc);
                rc
            }
            // SAFETY: the graph's own memset and copy, on the launch's stream.
            Step::Memset(m) => unsafe { memset(m, stream) },
            Step::Memcpy(c) => unsafe { cu::cuMemcpy3DAsync_v2(&**c, stream) },
            Step::Pass | Step::Stop(_) => cu::CUresult::CUDA_SUCCESS,
        };
        if rc != cu::CUresult::CUDA_SUCCESS {
            eprintln!("kernelpair capture: running a graph's node failed: {rc:?}");
            break;
        }
    }
    if let Err(e) = sync("after the graph's nodes").and_then(|()| restore(&saved)) {
        eprintln!("kernelpair capture: putting back what a graph's nodes wrote: {e}");
    }
    if let Some(Step::Stop(why)) = rest.first() {
        not_run(
            rest,
            Some(&format!(
                "launched by a CUDA graph, after {why}, which capture does not run: the nodes from there on are not captured"
            )),
        );
    }
}

/// The kernel nodes among `steps`.
fn kernels(steps: &[Step]) -> impl Iterator<Item = &Launch> {
    steps.iter().filter_map(|s| match s {
        Step::Kernel(l) => Some(l),
        _ => None,
    })
}

/// Kernel nodes this file does not run: each is counted, and written as a skip saying `why`
/// when it is within its kernel's first K launches ([`enter`]).
fn not_run(steps: &[Step], why: Option<&str>) {
    for l in kernels(steps) {
        let c = OWN_CORRELATION.fetch_sub(1, Ordering::Relaxed);
        enter(l, c, why);
        exit(c, cu::CUresult::CUDA_SUCCESS);
    }
}

fn launch(l: &Launch) -> cu::CUresult {
    // SAFETY: the node's own function, geometry and parameter array (owned by the live
    // cloned graph), on the graph launch's stream.
    unsafe {
        if l.cooperative {
            cu::cuLaunchCooperativeKernel(
                l.f,
                l.grid[0],
                l.grid[1],
                l.grid[2],
                l.block[0],
                l.block[1],
                l.block[2],
                l.shared_mem,
                l.stream,
                l.params,
            )
        } else {
            cu::cuLaunchKernel(
                l.f,
                l.grid[0],
                l.grid[1],
                l.grid[2],
                l.block[0],
                l.block[1],
                l.block[2],
                l.shared_mem,
                l.stream,
                l.params,
                l.extra,
            )
        }
    }
}

/// # Safety
/// `m` must be a memset node's parameters, its destination live.
unsafe fn memset(m: &cu::CUDA_MEMSET_NODE_PARAMS, stream: cu::CUstream) -> cu::CUresult {
    let (d, p, w, h) = (m.dst, m.pitch, m.width, m.height.max(1));
    // SAFETY: as the caller promises; the value is truncated to the element size as the
    // graph's node does.
    unsafe {
        match m.elementSize {
            1 => cu::cuMemsetD2D8Async(d, p, m.value as u8, w, h, stream),
            2 => cu::cuMemsetD2D16Async(d, p, m.value as u16, w, h, stream),
            _ => cu::cuMemsetD2D32Async(d, p, m.value, w, h, stream),
        }
    }
}

/// Every allocation the steps may write (each allocation a kernel parameter word points
/// into, the kernel modules' globals asked for, memset and device-copy destinations),
/// copied to the host.
fn save(cfg: &Config, steps: &[Step]) -> Result<Vec<(u64, AllocKind, Vec<u8>)>, String> {
    let mut ranges: Vec<(u64, u64, AllocKind)> = Vec::new();
    let mut add = |r: Option<(u64, u64, AllocKind)>| {
        if let Some(r) = r.filter(|r| !ranges.iter().any(|q| q.0 == r.0)) {
            ranges.push(r);
        }
    };
    for s in steps {
        match s {
            Step::Kernel(l) => {
                for (_, bytes) in param_bytes(l)? {
                    for (_, w) in pointer_words(&bytes) {
                        add(allocation_of(w));
                    }
                }
                for (_, p, n) in module_globals(cfg, l.f) {
                    add(Some((p, n, AllocKind::Device)));
                }
            }
            Step::Memset(m) => add(allocation_of(m.dst)),
            Step::Memcpy(c) if matches!(memory_type(&c.dstMemoryType), 2 | 4) => {
                add(allocation_of(c.dstDevice))
            }
            _ => {}
        }
    }
    let total: u64 = ranges.iter().map(|r| r.1).sum();
    if total > cfg.max_bytes {
        return Err(format!(
            "over the byte budget: its nodes may write {} allocation(s) of {total} bytes, the budget is {}",
            ranges.len(),
            cfg.max_bytes
        ));
    }
    ranges
        .into_iter()
        .map(|(addr, bytes, kind)| {
            let mut host = vec![0u8; bytes as usize];
            // SAFETY: one live allocation (or mapped host range) of `bytes` bytes.
            let rc = unsafe {
                match kind {
                    AllocKind::HostMapped => {
                        cu::cuMemcpy(host.as_mut_ptr() as u64, addr, bytes as usize)
                    }
                    _ => {
                        cu::cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, addr, bytes as usize)
                    }
                }
            };
            check(rc, &format!("saving {bytes} bytes at {addr:#x}")).map(|()| (addr, kind, host))
        })
        .collect()
}

fn restore(saved: &[(u64, AllocKind, Vec<u8>)]) -> Result<(), String> {
    for (addr, kind, host) in saved {
        // SAFETY: the allocation the bytes were saved from, still live inside this call.
        let rc = unsafe {
            match kind {
                AllocKind::HostMapped => cu::cuMemcpy(*addr, host.as_ptr() as u64, host.len()),
                _ => cu::cuMemcpyHtoD_v2(*addr, host.as_ptr() as *const c_void, host.len()),
            }
        };
        check(
            rc,
            &format!("putting back {} bytes at {addr:#x}", host.len()),
        )?;
    }
    sync("after putting memory back")
}

#[cfg(test)]
mod tests {
    use super::dependency_order;

    #[test]
    fn nodes_come_after_what_they_depend_on_and_ties_keep_their_order() {
        // 0 → 2 → 3, 1 → 3: 0 and 1 are free at once and keep their order.
        assert_eq!(
            dependency_order(4, &[(2, 3), (0, 2), (1, 3)]),
            Some(vec![0, 1, 2, 3])
        );
        // A chain given backwards.
        assert_eq!(dependency_order(3, &[(2, 1), (1, 0)]), Some(vec![2, 1, 0]));
        assert_eq!(dependency_order(2, &[(0, 1), (1, 0)]), None);
        assert_eq!(dependency_order(0, &[]), Some(vec![]));
    }
}
