import type { LinkingMessages } from '../en.js'

const id: LinkingMessages = {
  signInMethods: 'Metode masuk',
  loadingMethods: 'Memuat metode masuk…',
  signInToManage: 'Masuk ke aplikasi untuk melihat dan mengubah cara Anda masuk.',
  kindEmail: 'Email',
  kindPasskey: 'Passkey',
  kindWallet: 'Dompet',
  kindOAuth: 'Akun sosial',
  linkedOn: 'Ditautkan {date}',
  remove: 'Hapus',
  removeMethod: 'Hapus {label}',
  onlyMethod: 'Ini satu-satunya cara Anda masuk. Tambahkan cara lain sebelum menghapusnya.',
  addMethod: 'Tambah metode masuk',
  emailToLink: 'Alamat email yang ditambahkan',
  sendCode: 'Kirim kode',
  typeCodeInFrame: 'Ketik kode yang dikirim ke {email} di dialog.',
  signInWalletToLink: 'Tanda tangani pesan di {name}',
  linking: 'Menautkan…',
  methodLinked: '{label} ditautkan. Sekarang Anda bisa masuk dengannya.',
  removing: 'Menghapus…',
  methodRemoved: '{label} dihapus.',
  secondFactor: 'Faktor kedua',
  mfaOff: 'Belum ada faktor kedua.',
  mfaOn: 'Aplikasi autentikator sudah disiapkan.',
  setUpTotp: 'Siapkan aplikasi autentikator',
  settingUpTotp: 'Menyiapkan aplikasi autentikator…',
  totpEnrolled: 'Aplikasi autentikator siap. Simpan kode pemulihan Anda di tempat aman.',
  methodsStatus: 'Status metode masuk',
}

export default id
