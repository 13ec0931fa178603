//! Texture and surface objects as a capture records them and replay rebuilds them.
//!
//! A `cudaTextureObject_t`/`cudaSurfaceObject_t` kernel parameter is a 64-bit handle, not
//! a device address: what it reads is described by the driver (`cuTexObjectGetResourceDesc`,
//! `cuTexObjectGetTextureDesc`, `cuSurfObjectGetResourceDesc`). [`ObjectDesc`] is that
//! description in a serializable form: the resource (linear memory, pitched 2D memory, or a
//! CUDA array) naming the captured allocation that holds its bytes, and for a texture its
//! sampling state. The injector writes it into the manifest; replay carries it into the
//! harness ([`crate::harness::ResolvedObject`]) with the allocation index turned into the
//! buffer argument that holds the same bytes, and the runner creates a fresh object over
//! that buffer for every size set.
//!
//! The driver's descriptor structs hold enums (formats, address and filter modes) that a
//! newer driver may extend; they are read and written here through mirrors of the same
//! layout with plain integers ([`RawResourceDesc`], [`RawTextureDesc`], [`RawArrayDesc`]),
//! so an unknown value is a value to refuse, never an invalid Rust enum.

use serde::{Deserialize, Serialize};

/// Texture (read through the texture unit, with sampling) or surface (read and written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    Texture,
    Surface,
}

/// What memory an object views. `alloc` is the captured allocation in a manifest, the
/// buffer argument in a resolved harness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "resource", rename_all = "snake_case")]
pub enum ObjectResource {
    /// `bytes` of linear memory from `offset` into `alloc`.
    Linear {
        alloc: usize,
        offset: u64,
        format: u32,
        channels: u32,
        bytes: u64,
    },
    /// A pitched 2D view from `offset` into `alloc`: `height` rows of `pitch` bytes.
    Pitch2d {
        alloc: usize,
        offset: u64,
        format: u32,
        channels: u32,
        width: u64,
        height: u64,
        pitch: u64,
    },
    /// A CUDA array; `alloc` holds its contents densely, row after row, layer after layer.
    Array {
        alloc: usize,
        format: u32,
        channels: u32,
        width: u64,
        height: u64,
        depth: u64,
        flags: u32,
    },
}

impl ObjectResource {
    pub fn alloc(&self) -> usize {
        match self {
            ObjectResource::Linear { alloc, .. }
            | ObjectResource::Pitch2d { alloc, .. }
            | ObjectResource::Array { alloc, .. } => *alloc,
        }
    }

    pub fn with_alloc(&self, a: usize) -> ObjectResource {
        let mut r = self.clone();
        match &mut r {
            ObjectResource::Linear { alloc, .. }
            | ObjectResource::Pitch2d { alloc, .. }
            | ObjectResource::Array { alloc, .. } => *alloc = a,
        }
        r
    }
}

/// A texture's sampling state, as the driver reports it: `CUDA_TEXTURE_DESC` itself
/// (its reserved tail is not written to manifests).
pub type Sampling = RawTextureDesc;

/// One texture or surface object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectDesc {
    pub kind: ObjectKind,
    #[serde(flatten)]
    pub resource: ObjectResource,
    /// Textures only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
}

/// Bytes per channel of a `CUarray_format` this tool copies (8-, 16- and 32-bit integers,
/// half, float); None for the others (NV12, block-compressed, packed normalized formats).
pub fn channel_bytes(format: u32) -> Option<u64> {
    match format {
        1 | 8 => Some(1),
        2 | 9 | 16 => Some(2),
        3 | 10 | 32 => Some(4),
        _ => None,
    }
}

/// `CUDA_ARRAY3D_LAYERED`, `CUDA_ARRAY3D_SURFACE_LDST`, `CUDA_ARRAY3D_CUBEMAP`,
/// `CUDA_ARRAY3D_TEXTURE_GATHER`: the array flags a rebuilt array may carry. Others
/// (sparse, deferred mapping, depth textures) are refused.
pub const ARRAY_FLAGS: u32 = 0x01 | 0x02 | 0x04 | 0x08;

/// Bytes of an array's dense image: width × height × depth elements (a 1D array has
/// height and depth 0, a 2D one depth 0).
pub fn array_bytes(format: u32, channels: u32, width: u64, height: u64, depth: u64) -> Option<u64> {
    let elem = channel_bytes(format)?.checked_mul(u64::from(channels))?;
    elem.checked_mul(width)?
        .checked_mul(height.max(1))?
        .checked_mul(depth.max(1))
}

/// `CUDA_RESOURCE_DESC` with integers for its enums (same layout, checked below).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RawResourceDesc {
    pub res_type: u32,
    /// The union: array handle, or devPtr/format/channels/sizes, at byte 0..128.
    pub res: [u64; 16],
    pub flags: u32,
}

/// `CU_RESOURCE_TYPE_*`.
pub const RES_ARRAY: u32 = 0;
pub const RES_MIPMAPPED_ARRAY: u32 = 1;
pub const RES_LINEAR: u32 = 2;
pub const RES_PITCH2D: u32 = 3;

impl RawResourceDesc {
    pub fn zeroed() -> RawResourceDesc {
        RawResourceDesc {
            res_type: 0,
            res: [0; 16],
            flags: 0,
        }
    }

    /// The device pointer of a linear or pitched resource; the array handle of an array.
    pub fn handle(&self) -> u64 {
        self.res[0]
    }

    /// (format, channels) of a linear or pitched resource.
    pub fn format(&self) -> (u32, u32) {
        (self.res[1] as u32, (self.res[1] >> 32) as u32)
    }

    pub fn linear(ptr: u64, format: u32, channels: u32, bytes: u64) -> RawResourceDesc {
        let mut d = RawResourceDesc::zeroed();
        d.res_type = RES_LINEAR;
        d.res[0] = ptr;
        d.res[1] = u64::from(format) | (u64::from(channels) << 32);
        d.res[2] = bytes;
        d
    }

    #[allow(clippy::too_many_arguments)] // the driver's own fields, one by one
    pub fn pitch2d(
        ptr: u64,
        format: u32,
        channels: u32,
        width: u64,
        height: u64,
        pitch: u64,
    ) -> RawResourceDesc {
        let mut d = RawResourceDesc::linear(ptr, format, channels, 0);
        d.res_type = RES_PITCH2D;
        d.res[2] = width;
        d.res[3] = height;
        d.res[4] = pitch;
        d
    }

    pub fn array(handle: u64) -> RawResourceDesc {
        let mut d = RawResourceDesc::zeroed();
        d.res_type = RES_ARRAY;
        d.res[0] = handle;
        d
    }
}

/// `CUDA_TEXTURE_DESC` with integers for its enums.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RawTextureDesc {
    pub address_mode: [u32; 3],
    pub filter_mode: u32,
    /// `CU_TRSF_*`: read as integer, normalized coordinates, sRGB, …
    pub flags: u32,
    pub max_anisotropy: u32,
    pub mipmap_filter_mode: u32,
    pub mipmap_level_bias: f32,
    pub min_mipmap_level_clamp: f32,
    pub max_mipmap_level_clamp: f32,
    pub border_color: [f32; 4],
    #[serde(skip)]
    pub reserved: [i32; 12],
}

/// `CUDA_ARRAY3D_DESCRIPTOR` with an integer format.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct RawArrayDesc {
    pub width: usize,
    pub height: usize,
    pub depth: usize,
    pub format: u32,
    pub channels: u32,
    pub flags: u32,
}

// The mirrors have the driver structs' sizes (their field offsets follow from repr(C)).
const _: () = {
    use cudarc::driver::sys as cu;
    assert!(
        std::mem::size_of::<RawResourceDesc>() == std::mem::size_of::<cu::CUDA_RESOURCE_DESC>()
    );
    assert!(std::mem::size_of::<RawTextureDesc>() == std::mem::size_of::<cu::CUDA_TEXTURE_DESC>());
    assert!(
        std::mem::size_of::<RawArrayDesc>() == std::mem::size_of::<cu::CUDA_ARRAY3D_DESCRIPTOR>()
    );
};

/// One side of an array copy.
#[derive(Clone, Copy)]
pub enum CopySide {
    Host(*mut std::ffi::c_void),
    Device(u64),
    Array(cudarc::driver::sys::CUarray),
}

/// A 3D copy of an array's whole dense image from `src` to `dst` (one side the array):
/// rows of `width × channels × bytes` with no padding, `height` rows per layer.
pub fn array_copy(
    d: &RawArrayDesc,
    src: CopySide,
    dst: CopySide,
) -> Option<cudarc::driver::sys::CUDA_MEMCPY3D> {
    use cudarc::driver::sys::CUmemorytype as M;
    let row = (channel_bytes(d.format)? * u64::from(d.channels) * d.width as u64) as usize;
    let rows = d.height.max(1);
    let null = std::ptr::null_mut();
    let side = |s: CopySide| match s {
        CopySide::Host(p) => (M::CU_MEMORYTYPE_HOST, p, 0, null as _),
        CopySide::Device(p) => (M::CU_MEMORYTYPE_DEVICE, null, p, null as _),
        CopySide::Array(a) => (M::CU_MEMORYTYPE_ARRAY, null, 0, a),
    };
    let (st, sh, sd, sa) = side(src);
    let (dt, dh, dd, da) = side(dst);
    Some(cudarc::driver::sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: st,
        srcHost: sh,
        srcDevice: sd,
        srcArray: sa,
        reserved0: null,
        srcPitch: row,
        srcHeight: rows,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dt,
        dstHost: dh,
        dstDevice: dd,
        dstArray: da,
        reserved1: null,
        dstPitch: row,
        dstHeight: rows,
        WidthInBytes: row,
        Height: rows,
        Depth: d.depth.max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirrors_lay_out_fields_where_the_driver_reads_them() {
        let d = RawResourceDesc::pitch2d(0x7f00_0000_1000, 32, 4, 640, 480, 10240);
        assert_eq!(d.handle(), 0x7f00_0000_1000);
        assert_eq!(d.format(), (32, 4));
        assert_eq!((d.res[2], d.res[3], d.res[4]), (640, 480, 10240));
        // offsetof(CUDA_RESOURCE_DESC, res) is 8 and flags follows the 128-byte union.
        let base = &d as *const _ as usize;
        assert_eq!(&d.res as *const _ as usize - base, 8);
        assert_eq!(&d.flags as *const _ as usize - base, 136);
        let t = RawTextureDesc::default();
        let tb = &t as *const _ as usize;
        assert_eq!(&t.border_color as *const _ as usize - tb, 40);
    }

    #[test]
    fn an_arrays_dense_image_counts_every_row_and_layer() {
        assert_eq!(array_bytes(32, 1, 1024, 0, 0), Some(4096), "1D float");
        assert_eq!(array_bytes(1, 4, 64, 32, 0), Some(64 * 32 * 4), "2D uchar4");
        assert_eq!(
            array_bytes(16, 2, 8, 8, 6),
            Some(8 * 8 * 6 * 4),
            "layered half2"
        );
        assert_eq!(array_bytes(176, 1, 64, 64, 0), None, "NV12 is refused");
        let c = array_copy(
            &RawArrayDesc {
                width: 640,
                height: 480,
                depth: 0,
                format: 1,
                channels: 4,
                flags: 0,
            },
            CopySide::Device(0x7f00_0000_0000),
            CopySide::Array(std::ptr::null_mut()),
        )
        .unwrap();
        assert_eq!((c.WidthInBytes, c.Height, c.Depth), (2560, 480, 1));
        assert_eq!(
            (c.srcPitch, c.dstPitch, c.srcDevice),
            (2560, 2560, 0x7f00_0000_0000)
        );
    }

    #[test]
    fn a_manifest_object_reads_back_as_written() {
        let o = ObjectDesc {
            kind: ObjectKind::Texture,
            resource: ObjectResource::Array {
                alloc: 2,
                format: 32,
                channels: 1,
                width: 512,
                height: 512,
                depth: 0,
                flags: 0,
            },
            sampling: Some(Sampling {
                filter_mode: 1,
                flags: 2,
                ..Default::default()
            }),
        };
        let text = toml::to_string(&o).unwrap();
        assert!(text.contains("resource = \"array\""), "{text}");
        assert_eq!(toml::from_str::<ObjectDesc>(&text).unwrap(), o);
        assert_eq!(o.resource.with_alloc(5).alloc(), 5);
    }
}
